//! Which database a request reads from (`crate::reads`): [`Reader`] is the replica for a
//! caller it has caught up with, the primary otherwise; [`mark_writes`] stamps the callers of
//! requests that may write.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::Response;

use super::Error;
use crate::shared::Shared;
use crate::store::Store;

/// The store this request's reads that tolerate a lag go to.
pub(super) struct Reader(Store);

impl std::ops::Deref for Reader {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.0
    }
}

impl FromRequestParts<Shared> for Reader {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, shared: &Shared) -> Result<Self, Error> {
        let authorization = parts.headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        Ok(Reader(
            shared
                .reads
                .for_caller(&shared.store, authorization)
                .clone(),
        ))
    }
}

/// Stamps the caller of a request that may write (any method but GET and HEAD) once it is
/// answered, so its next reads wait for the replica to have replayed it.
pub(super) async fn mark_writes(
    axum::extract::State(shared): axum::extract::State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let reads = matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    );
    if reads || !shared.reads.has_replica() {
        return next.run(request).await;
    }
    let authorization = request.headers().get(AUTHORIZATION).cloned();
    let response = next.run(request).await;
    shared
        .reads
        .wrote(authorization.as_ref().map(|v| v.as_bytes()));
    response
}
