//! Repairing a task that ended in error: retry its failed step, or resolve that step by hand
//! with a result. The engine does the work in one transaction (`sql/tasker_repair.sql`); this
//! module checks the request, names the step, and maps a refusal to its status.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::json_check;

use super::extract::Path;
use super::{Error, fetch_task, parse_id, request_body};
use crate::effects;
use crate::shared::Shared;
use crate::store::{Repair, Repaired, TaskView};

/// The body of a retry or resolve; every field optional but `result` on resolve.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepairBody {
    /// Who asks (recorded in the history); e.g. `user:alice`.
    by: Option<String>,
    /// Why (recorded in the history).
    reason: Option<String>,
    /// Resolve only: the failed step's result, as its handler would have returned it.
    result: Option<Value>,
}

/// `POST /v1/tasks/{id}/retry`: the step that failed the task runs again.
pub(super) async fn retry_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    let body = parse_retry(&shared, body)?;
    repair(&shared, id, None, body).await
}

/// `POST /v1/tasks/{id}/steps/{step}/retry`: the named step (id or name), which must be the
/// one that failed the task, runs again.
pub(super) async fn retry_step(
    State(shared): State<Shared>,
    Path((id, step)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    let body = parse_retry(&shared, body)?;
    let step = step_id(&shared, id, &step).await?;
    repair(&shared, id, Some(step), body).await
}

/// `POST /v1/tasks/{id}/steps/{step}/resolve`: the step that failed the task is completed with
/// the supplied `result`, and the DAG goes on from there.
pub(super) async fn resolve_step(
    State(shared): State<Shared>,
    Path((id, step)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    let body = parse(&shared, body)?;
    match &body.result {
        None => {
            return Err(Error::bad_request(
                "missing_result",
                "`result` is required: the step's result, as its handler would have returned it (any JSON but null)",
            ));
        }
        Some(result) => {
            if let Err(problem) = json_check::check(result, json_check::MAX_DEPTH) {
                return Err(
                    Error::bad_request("invalid_result", format!("`result` {problem}"))
                        .with_details(json!({ "problem": problem.code() })),
                );
            }
        }
    }
    let step = step_id(&shared, id, &step).await?;
    repair(&shared, id, Some(step), body).await
}

/// The body of a retry, which takes no `result`.
fn parse_retry(shared: &Shared, body: Result<Bytes, BytesRejection>) -> Result<RepairBody, Error> {
    let body = parse(shared, body)?;
    if body.result.is_some() {
        return Err(Error::bad_request(
            "invalid_json",
            "a retry takes no `result`; to complete the step by hand, POST it to …/steps/{step}/resolve",
        ));
    }
    Ok(body)
}

/// The body, which may be empty; `by` and `reason` bounded and free of control characters.
fn parse(shared: &Shared, body: Result<Bytes, BytesRejection>) -> Result<RepairBody, Error> {
    let body = request_body(shared, body)?;
    let body: RepairBody = if body.iter().all(u8::is_ascii_whitespace) {
        RepairBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))?
    };
    for (field, value, max) in [("by", &body.by, 256), ("reason", &body.reason, 1_000)] {
        if let Some(v) = value
            && (v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control))
        {
            return Err(Error::bad_request(
                "invalid_json",
                format!("`{field}` must be 1 to {max} characters, none of them control characters"),
            ));
        }
    }
    Ok(body)
}

/// A step named by id or by name; `404 task_not_found` / `step_not_found`.
async fn step_id(shared: &Shared, task: Uuid, step: &str) -> Result<Uuid, Error> {
    fetch_task(shared, task).await?;
    let found = match Uuid::parse_str(step) {
        Ok(id) => shared.store.step_in_task(task, Some(id), None).await?,
        Err(_) => shared.store.step_in_task(task, None, Some(step)).await?,
    };
    found.ok_or_else(|| {
        Error::not_found(
            "step_not_found",
            format!("task {task} has no step {step:?}"),
        )
    })
}

async fn repair(
    shared: &Shared,
    id: Uuid,
    step: Option<Uuid>,
    body: RepairBody,
) -> Result<Json<TaskView>, Error> {
    let repair = Repair {
        step,
        resolution: body.result,
        by: body.by,
        reason: body.reason,
    };
    match shared.store.repair(id, &repair).await? {
        Repaired::Done(effects) => {
            effects::execute(shared, effects).await;
            Ok(Json(fetch_task(shared, id).await?))
        }
        Repaired::Refused { code, message } => Err(refusal(&code, message)),
    }
}

/// The status and stable code of a refused repair.
fn refusal(code: &str, message: String) -> Error {
    let (status, code) = match code {
        "task_not_found" => (StatusCode::NOT_FOUND, "task_not_found"),
        "step_not_found" => (StatusCode::NOT_FOUND, "step_not_found"),
        "task_not_failed" => (StatusCode::CONFLICT, "task_not_failed"),
        "step_not_failed" => (StatusCode::CONFLICT, "step_not_failed"),
        "invalid_result" => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_result"),
        other => {
            tracing::error!(code = other, "tasker_repair refused with an unknown code");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal")
        }
    };
    Error::new(status, code, message)
}
