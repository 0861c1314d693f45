//! API errors: each maps to a status and a stable code. Internal details go to the log only.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A failed request.
#[derive(Debug)]
pub struct Error {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Option<Value>,
}

impl Error {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        debug_assert!(
            tasker_shared::api::ERROR_CODES.contains(&code),
            "error code {code} is not in tasker_shared::api::ERROR_CODES (the OpenAPI enum)"
        );
        Self {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// Its stable code (one of `ERROR_CODES`).
    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The error as the body of an answer carries it (a bulk item's refusal).
    pub fn detail(self) -> tasker_shared::api::ErrorDetail {
        tasker_shared::api::ErrorDetail {
            code: self.code.to_owned(),
            message: self.message,
            details: self.details,
        }
    }
}

impl From<crate::store::Error> for Error {
    /// An unreachable database is worth retrying (503); anything else is a bug or bad stored
    /// data (500). Either way the details go to the log, never to the client.
    fn from(e: crate::store::Error) -> Self {
        if let crate::store::Error::Limits(k) = e {
            return Self::new(StatusCode::UNPROCESSABLE_ENTITY, k.code, k.message);
        }
        if let crate::store::Error::RateKeyOwned { key, owner, .. } = &e {
            let details = serde_json::json!({ "key": key, "namespace": owner });
            return Self::new(StatusCode::CONFLICT, "rate_key_owned", e.to_string())
                .with_details(details);
        }
        if let crate::store::Error::TimedOut(_) = e {
            ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name,
                "bound" => "orchestrator.list_timeout_ms")
            .increment(1);
            return Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "query_timeout",
                "the query took longer than orchestrator.list_timeout_ms allows; narrow its \
                 filters",
            )
            .with_details(json!({ "bound": "orchestrator.list_timeout_ms" }));
        }
        if let crate::store::Error::Unavailable(_) = e {
            tracing::warn!(error = %e, "database unavailable while serving a request");
            Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable",
                "the task store is unavailable; try again",
            )
        } else {
            tracing::error!(error = %e, "storage error while serving a request");
            Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; the server log has the details",
            )
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if let Some(details) = self.details {
            body["error"]["details"] = details;
        }
        (self.status, Json(body)).into_response()
    }
}
