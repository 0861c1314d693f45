//! What many handlers share: reading a request body, checking filters and limits, finding a
//! task.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use uuid::Uuid;

use super::Error;
use crate::shared::Shared;
use crate::store::TaskView;

/// The request body, or the API's error for one that is too large, too slow or unreadable.
pub(super) fn request_body(
    shared: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Bytes, Error> {
    body.map_err(|e| {
        if let Some(slow) = slow_body(&e) {
            ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name, "bound" => slow.bound)
                .increment(1);
            return Error::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_too_slow",
                slow.message.clone(),
            )
            .with_details(serde_json::json!({ "bound": slow.bound }));
        }
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Error::new(
                status,
                "body_too_large",
                format!(
                    "request body exceeds {} bytes",
                    shared.config.orchestrator.max_body_bytes
                ),
            )
        } else {
            Error::new(status, "bad_body", e.body_text())
        }
    })
}

/// The pace a body broke, if that is why it could not be read (`crate::serve::body`).
fn slow_body(e: &BytesRejection) -> Option<&crate::serve::body::SlowBody> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(slow) = s.downcast_ref::<crate::serve::body::SlowBody>() {
            return Some(slow);
        }
        source = s.source();
    }
    None
}

/// The request body as JSON of type `T`, or `invalid_json` saying why not.
pub(super) fn json_body<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Error> {
    let body = request_body(shared, body)?;
    parse_json(&body)
}

/// [`json_body`] for a body that may be left out (empty or blank: `T::default()`).
pub(super) fn optional_json_body<T: serde::de::DeserializeOwned + Default>(
    shared: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Error> {
    let body = request_body(shared, body)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse_json(&body)
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body)
        .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))
}

/// A query-string filter matched against stored text: bounded, no control characters (NUL
/// cannot even be sent to PostgreSQL).
pub(super) fn check_filter(field: &str, value: Option<&str>) -> Result<(), Error> {
    match value {
        Some(v) if v.len() > 128 || v.chars().any(char::is_control) => Err(Error::bad_request(
            "invalid_query",
            format!("`{field}` must be at most 128 characters, none of them control characters"),
        )),
        _ => Ok(()),
    }
}

pub(super) fn unknown_template(namespace: &str, name: &str, version: Option<&str>) -> Error {
    Error::not_found(
        "unknown_template",
        format!(
            "no template {namespace}/{name}{}",
            version.map(|v| format!("@{v}")).unwrap_or_default()
        ),
    )
}

/// A list's `?limit=`: 1 to 500, default 50.
pub(super) fn check_limit(limit: Option<i64>) -> Result<i64, Error> {
    let limit = limit.unwrap_or(50);
    if (1..=500).contains(&limit) {
        Ok(limit)
    } else {
        Err(Error::bad_request(
            "invalid_limit",
            "`limit` must be between 1 and 500",
        ))
    }
}

/// A page's `?limit=` for the lists of keys and schedules: 1 to 1,000, default 500 (most
/// deployments see all of theirs at once; clients follow `next` beyond).
pub(super) fn page_limit(limit: Option<i64>) -> Result<i64, Error> {
    let limit = limit.unwrap_or(500);
    if (1..=1_000).contains(&limit) {
        Ok(limit)
    } else {
        Err(Error::bad_request(
            "invalid_limit",
            "`limit` must be between 1 and 1000",
        ))
    }
}

pub(super) fn is_terminal(task: &TaskView) -> bool {
    tasker_shared::TaskState::parse(&task.state).is_some_and(|s| s.is_terminal())
}

pub(super) async fn fetch_task(shared: &Shared, id: Uuid) -> Result<TaskView, Error> {
    fetch_task_on(&shared.store, id).await
}

/// [`fetch_task`] from `store` (a request's [`super::reader::Reader`]).
pub(super) async fn fetch_task_on(
    store: &crate::store::Store,
    id: Uuid,
) -> Result<TaskView, Error> {
    store
        .task(id)
        .await?
        .ok_or_else(|| Error::not_found("task_not_found", format!("no task {id}")))
}

/// The first and last task id that begin with `prefix` (4 to 32 hexadecimal digits, hyphens
/// ignored), or 400 `invalid_id_prefix`.
pub(super) fn parse_id_prefix(prefix: &str) -> Result<(Uuid, Uuid), Error> {
    let digits: String = prefix
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let valid = (4..=32).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_hexdigit());
    if !valid {
        return Err(Error::bad_request(
            "invalid_id_prefix",
            format!(
                "{prefix:?} is not the beginning of a task id: 4 to 32 hexadecimal digits \
                 (hyphens allowed), such as 0193a7c2"
            ),
        ));
    }
    let end = |fill: char| {
        let mut id = digits.clone();
        id.extend(std::iter::repeat_n(fill, 32 - digits.len()));
        Uuid::parse_str(&id).expect("32 hexadecimal digits are a UUID")
    };
    Ok((end('0'), end('f')))
}

pub(super) fn parse_id(s: &str) -> Result<Uuid, Error> {
    Uuid::parse_str(s).map_err(|_| {
        Error::bad_request("invalid_id", format!("{s:?} is not a valid task id (UUID)"))
    })
}

/// The answer of a `PUT` (or upsert) that saved `view`: `201 Created` when it made it, else
/// `200`.
pub(super) fn saved<T: serde::Serialize>(view: T, created: bool) -> axum::response::Response {
    use axum::response::IntoResponse;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (status, axum::Json(view)).into_response()
}
