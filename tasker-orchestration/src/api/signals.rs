//! Signals: sent to a task, stored until a wait step waiting for their name consumes them.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use tasker_shared::api::{ErrorBody, SendSignal, Signal, SignalList};
use tasker_shared::time::is_signal_name;

use super::access::Caller;
use super::extract::Path;
use super::{Error, fetch_task, optional_json_body, parse_id};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::Signalled;

/// Largest signal payload, in bytes of JSON.
const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// Sends a signal to a task. It is stored, and the first wait step waiting for its name
/// consumes it — now if one waits, or when one begins waiting — and completes with its
/// payload. Sending the same `signal_id` again with the same payload changes nothing.
#[utoipa::path(post, path = "/v1/tasks/{id}/signals/{name}", operation_id = "send_signal", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id"),
           ("name" = String, Path, description = "The signal's name: 1 to 64 ASCII letters, digits, `_`, `-`, `.`")),
    request_body(content = SendSignal, description = "Optional: `signal_id` and `payload`"),
    responses(
        (status = 201, description = "Stored", body = Signal),
        (status = 200, description = "The same signal was stored already", body = Signal),
        (status = 400, description = "`invalid_id`, `invalid_signal_name`, `invalid_signal_id`, `invalid_json`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
        (status = 409, description = "`signal_conflict`: the `signal_id` was sent with another name or payload; `task_finished`: the task has ended; `too_many_signals`: the task holds `orchestrator.max_signals_per_task` signals", body = ErrorBody),
        (status = 413, description = "`signal_too_large`: a payload over 64 KiB", body = ErrorBody),
    ))]
pub(super) async fn send(
    State(shared): State<Shared>,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let id = parse_id(&id)?;
    if !is_signal_name(&name) {
        return Err(Error::bad_request(
            "invalid_signal_name",
            format!(
                "a signal name is 1 to 64 ASCII letters, digits, `_`, `-` or `.` (got {name:?})"
            ),
        ));
    }
    let req: SendSignal = optional_json_body(&shared, body)?;
    let signal_id = match req.signal_id {
        Some(s) if (1..=128).contains(&s.chars().count()) && !s.chars().any(char::is_control) => s,
        Some(_) => {
            return Err(Error::bad_request(
                "invalid_signal_id",
                "`signal_id` must be 1 to 128 characters, none of them control characters",
            ));
        }
        None => uuid::Uuid::now_v7().to_string(),
    };
    let payload = req.payload.unwrap_or(Value::Null);
    if serde_json::to_vec(&payload).map_or(usize::MAX, |b| b.len()) > MAX_PAYLOAD_BYTES {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "signal_too_large",
            format!("a signal's payload is at most {MAX_PAYLOAD_BYTES} bytes of JSON"),
        ));
    }
    if let Err(problem) =
        tasker_shared::json_check::check(&payload, tasker_shared::json_check::MAX_DEPTH)
    {
        return Err(Error::bad_request(
            "invalid_json",
            format!("`payload`: {problem}"),
        ));
    }
    caller.check_task(&shared, id).await?;
    let max = shared.config.orchestrator.max_signals_per_task;
    match shared
        .store
        .signal(id, &name, &signal_id, &payload, max)
        .await?
    {
        Signalled::Created { signal, wake } => {
            ::metrics::counter!(m::SIGNALS_RECEIVED.name).increment(1);
            if !wake.is_empty() {
                shared.alarm.ring();
            }
            Ok((StatusCode::CREATED, Json(signal)).into_response())
        }
        Signalled::Existing(signal) => Ok((StatusCode::OK, Json(signal)).into_response()),
        Signalled::Conflict(_) => Err(Error::new(
            StatusCode::CONFLICT,
            "signal_conflict",
            format!(
                "signal {signal_id:?} of task {id} was sent already with another name or payload"
            ),
        )),
        Signalled::Finished(state) => Err(Error::new(
            StatusCode::CONFLICT,
            "task_finished",
            format!("task {id} is {state}: it takes no more signals"),
        )),
        Signalled::NoTask => Err(Error::not_found("task_not_found", format!("no task {id}"))),
        Signalled::TooMany => {
            ::metrics::counter!(m::BOUNDS_REFUSED.name,
                "bound" => "orchestrator.max_signals_per_task")
            .increment(1);
            Err(Error::new(
                StatusCode::CONFLICT,
                "too_many_signals",
                format!(
                    "task {id} holds {max} signals, the most a task may \
                     (orchestrator.max_signals_per_task)"
                ),
            )
            .with_details(
                serde_json::json!({ "bound": "orchestrator.max_signals_per_task", "limit": max }),
            ))
        }
    }
}

/// A task's signals, oldest first, with the step that consumed each (all of them: a task holds
/// at most `orchestrator.max_signals_per_task`).
#[utoipa::path(get, path = "/v1/tasks/{id}/signals", operation_id = "list_signals", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id")),
    responses(
        (status = 200, body = SignalList),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<SignalList>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    fetch_task(&shared, id).await?;
    Ok(Json(SignalList {
        signals: shared
            .store
            .signals(id, shared.config.orchestrator.max_signals_per_task)
            .await?,
    }))
}
