//! The start controls of a creation request (`dedupe`, `debounce`; docs/events.md): checked
//! with the rest of the request, and the answer to a request one of them held.

use axum::http::StatusCode;
use serde_json::json;

use tasker_shared::api::CreateTask;
use tasker_shared::start_controls::check_key;

use super::Error;
use crate::store::{Controlled, Controls};

/// The key that makes a request idempotent: its dedupe window's, else its `idempotency_key`.
pub(super) fn idempotency_key(req: &CreateTask) -> Option<&str> {
    match &req.dedupe {
        Some(d) => d.key.as_deref(),
        None => req.idempotency_key.as_deref(),
    }
}

/// A request's start controls, checked, and its idempotency key (its dedupe window's key when
/// it has one).
pub(super) fn check(req: &CreateTask) -> Result<(Option<String>, Controls), Error> {
    let mut controls = Controls::default();
    let mut key = req.idempotency_key.clone();
    if let Some(dedupe) = &req.dedupe {
        let bad = |message: String| Error::bad_request("invalid_dedupe", message);
        if req.idempotency_key.is_some() {
            return Err(bad(
                "give `dedupe` or `idempotency_key`, not both: `dedupe.key` is the idempotency key"
                    .into(),
            ));
        }
        key = Some(check_key("dedupe.key", dedupe.key.as_deref()).map_err(|e| bad(e.to_string()))?);
        controls.dedupe = Some(dedupe.check("dedupe").map_err(|e| bad(e.to_string()))?);
    }
    if let Some(debounce) = &req.debounce {
        let bad = |message: String| Error::bad_request("invalid_debounce", message);
        let others = [
            ("idempotency_key", req.idempotency_key.is_some()),
            ("dedupe", req.dedupe.is_some()),
            ("run_at", req.run_at.is_some()),
            ("delay", req.delay.is_some()),
        ];
        if let Some((field, _)) = others.iter().find(|(_, given)| *given) {
            return Err(bad(format!(
                "`debounce` decides when the task starts and which request it is: not with `{field}`"
            )));
        }
        let k =
            check_key("debounce.key", debounce.key.as_deref()).map_err(|e| bad(e.to_string()))?;
        controls.debounce = Some((
            k,
            debounce.check("debounce").map_err(|e| bad(e.to_string()))?,
        ));
    }
    Ok((key, controls))
}

/// The answer to a request whose dedupe window answered a task purged since: 409
/// `deduplicated`, naming the task and the window's end.
pub(super) fn deduplicated(task: uuid::Uuid, held: Option<Controlled>) -> Option<Error> {
    let Some(Controlled::Deduplicated { until }) = held else {
        return None;
    };
    let end = until.map(|u| u.to_rfc3339()).unwrap_or_default();
    Some(
        Error::new(
            StatusCode::CONFLICT,
            "deduplicated",
            format!(
                "task {task} was started with this dedupe key and has been purged since; the \
                 key starts a new task after {end}"
            ),
        )
        .with_details(json!({ "task_id": task, "until": until })),
    )
}

/// Counts a request a start control answered without creating a task.
pub(crate) fn count(held: Option<Controlled>) {
    let outcome = match held {
        Some(Controlled::Debounced) => "debounced",
        Some(Controlled::Deduplicated { .. }) => "deduplicated",
        None => return,
    };
    ::metrics::counter!(crate::metrics::START_CONTROLS_HELD.name, "outcome" => outcome)
        .increment(1);
}
