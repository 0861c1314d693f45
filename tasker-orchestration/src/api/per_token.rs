//! What one token may have in progress at once: requests (`orchestrator.max_requests_per_token`,
//! a body being read or a long poll included) and long polls (`max_waits_per_token`); past
//! either, 429 naming the bound. Without tokens (`auth = "off"`) there is no one to count:
//! the connection caps of `crate::serve` bound such callers.

use std::sync::Arc;

use axum::Extension;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::Error;
use super::access::Caller;
use crate::slots::{Slot, Slots};
use crate::store::Principal;

/// The slots of every token.
#[derive(Debug)]
pub(super) struct PerToken {
    requests: Arc<Slots<String>>,
    waits: Arc<Slots<String>>,
}

impl PerToken {
    pub(super) fn new(o: &tasker_shared::config::OrchestratorConfig) -> Arc<Self> {
        Arc::new(PerToken {
            requests: Slots::new(o.max_requests_per_token),
            waits: Slots::new(o.max_waits_per_token),
        })
    }

    /// A long poll's slot for the caller's token (none needed without tokens), or 429.
    pub(super) fn wait(&self, caller: &Caller) -> Result<Option<Slot<String>>, Error> {
        let Some(p) = caller.principal() else {
            return Ok(None);
        };
        self.waits.take(&p.name).map(Some).ok_or_else(|| {
            refuse(
                "too_many_waits",
                "orchestrator.max_waits_per_token",
                self.waits.max(),
                format!(
                    "token {:?} holds {} long polls (`?wait=`), the most one token may; wait \
                     for one to end or read without `wait`",
                    p.name,
                    self.waits.max()
                ),
            )
        })
    }
}

fn refuse(code: &'static str, bound: &'static str, limit: usize, message: String) -> Error {
    ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name, "bound" => bound).increment(1);
    Error::new(StatusCode::TOO_MANY_REQUESTS, code, message)
        .with_details(json!({ "bound": bound, "limit": limit }))
}

/// The middleware (inside the token check, which names the caller): a request of a token that
/// has `max_requests_per_token` in progress is refused.
pub(super) async fn gate(
    Extension(per): Extension<Arc<PerToken>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(name) = req.extensions().get::<Principal>().map(|p| p.name.clone()) else {
        return next.run(req).await;
    };
    let Some(slot) = per.requests.take(&name) else {
        let max = per.requests.max();
        return refuse(
            "too_many_requests",
            "orchestrator.max_requests_per_token",
            max,
            format!("token {name:?} has {max} requests in progress, the most one token may"),
        )
        .into_response();
    };
    let response = next.run(req).await;
    drop(slot);
    response
}
