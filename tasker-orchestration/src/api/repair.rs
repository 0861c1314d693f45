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

use tasker_shared::api::{ErrorBody, RepairNote, Resolve, Task};
use tasker_shared::json_check;

use super::access::Caller;
use super::extract::Path;
use super::{Error, fetch_task, optional_json_body, parse_id};
use crate::executor;
use crate::shared::Shared;
use crate::store::{Principal, Repair, Repaired, TaskView};

/// The body of a retry ([`RepairNote`]) or resolve ([`Resolve`]); every field optional but
/// `result` on resolve.
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

/// Retries a task in `error`: the step that failed it runs again with its template's
/// attempts, the steps the failure cancelled wait for their parents again, completed steps
/// keep their results.
#[utoipa::path(post, path = "/v1/tasks/{id}/retry", tag = "repair",
    params(("id" = Uuid, Path, description = "The task's id")),
    request_body(content = Option<RepairNote>, description = "Optional: who asks and why"),
    responses(
        (status = 200, description = "The task, `running` again", body = Task),
        (status = 400, description = "`invalid_id`, `invalid_json`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
        (status = 409, description = "`task_not_failed`", body = ErrorBody),
    ))]
pub(super) async fn retry_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    let body = parse_retry(&shared, body)?;
    repair(&shared, id, None, body, caller).await
}

/// The same as retrying the task, naming the step (by id or name), which must be the one that
/// failed it.
#[utoipa::path(post, path = "/v1/tasks/{id}/steps/{step}/retry", tag = "repair",
    params(("id" = Uuid, Path, description = "The task's id"),
           ("step" = String, Path, description = "The step's id or name")),
    request_body(content = Option<RepairNote>, description = "Optional: who asks and why"),
    responses(
        (status = 200, description = "The task, `running` again", body = Task),
        (status = 400, description = "`invalid_id`, `invalid_json`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`, `step_not_found`", body = ErrorBody),
        (status = 409, description = "`task_not_failed`, `step_not_failed`", body = ErrorBody),
    ))]
pub(super) async fn retry_step(
    State(shared): State<Shared>,
    Path((id, step)): Path<(String, String)>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    let body = parse_retry(&shared, body)?;
    let step = step_id(&shared, id, &step).await?;
    repair(&shared, id, Some(step), body, caller).await
}

/// Completes the step that failed the task with the supplied `result`, as if its handler had
/// returned it, and the DAG goes on from there.
#[utoipa::path(post, path = "/v1/tasks/{id}/steps/{step}/resolve", tag = "repair",
    params(("id" = Uuid, Path, description = "The task's id"),
           ("step" = String, Path, description = "The step's id or name")),
    request_body = Resolve,
    responses(
        (status = 200, description = "The task, going on", body = Task),
        (status = 400, description = "`invalid_id`, `invalid_json`, `missing_result`, `invalid_result`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`, `step_not_found`", body = ErrorBody),
        (status = 409, description = "`task_not_failed`, `step_not_failed`", body = ErrorBody),
        (status = 422, description = "`invalid_result`: a decision must name its branches, a batchable step list its batches", body = ErrorBody),
    ))]
pub(super) async fn resolve_step(
    State(shared): State<Shared>,
    Path((id, step)): Path<(String, String)>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
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
    repair(&shared, id, Some(step), body, caller).await
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
    let body: RepairBody = optional_json_body(shared, body)?;
    check_note(body.by.as_deref(), body.reason.as_deref())?;
    Ok(body)
}

/// Who asks (`by`, 1 to 256 characters) and why (`reason`, 1 to 1,000), none of them control
/// characters; else 400 `invalid_json`.
pub(super) fn check_note(by: Option<&str>, reason: Option<&str>) -> Result<(), Error> {
    for (field, value, max) in [("by", by, 256), ("reason", reason, 1_000)] {
        if let Some(v) = value
            && (v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control))
        {
            return Err(Error::bad_request(
                "invalid_json",
                format!("`{field}` must be 1 to {max} characters, none of them control characters"),
            ));
        }
    }
    Ok(())
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
    caller: Caller,
) -> Result<Json<TaskView>, Error> {
    let repair = Repair {
        step,
        resolution: body.result,
        by: actor(body.by, caller.principal().cloned()),
        reason: body.reason,
    };
    match shared.store.repair(id, &repair).await? {
        Repaired::Done(effects) => {
            // The task as the repair left it (`running`), read before its steps go out: read
            // after, a fast worker could have finished them already. Publishing happens either
            // way, even if the read fails.
            let task = fetch_task(shared, id).await;
            executor::execute(shared, *effects).await;
            Ok(Json(task?))
        }
        Repaired::Refused { code, message } => Err(refusal(&code, message)),
    }
}

/// Who repairs, as recorded: with tokens required, the token's name, after the `by` the
/// request gave (`user:alice (token ci)`); without, the `by` given. At most 256 characters.
pub(super) fn actor(by: Option<String>, principal: Option<Principal>) -> Option<String> {
    let actor = match (by, principal) {
        (Some(by), Some(p)) => format!("{by} (token {})", p.name),
        (None, Some(p)) => format!("token:{}", p.name),
        (by, None) => return by,
    };
    Some(actor.chars().take(256).collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Scope;

    #[test]
    fn the_token_is_recorded_with_who_it_says_it_is() {
        let p = Principal {
            id: 1,
            name: "ci".into(),
            scope: Scope::Write,
            namespaces: None,
            expires_at: None,
        };
        assert_eq!(actor(None, Some(p.clone())).as_deref(), Some("token:ci"));
        assert_eq!(
            actor(Some("user:alice".into()), Some(p.clone())).as_deref(),
            Some("user:alice (token ci)")
        );
        assert_eq!(
            actor(Some("user:bob".into()), None).as_deref(),
            Some("user:bob")
        );
        assert_eq!(actor(None, None), None);
        let long = actor(Some("x".repeat(256)), Some(p)).unwrap();
        assert_eq!(long.chars().count(), 256);
    }
}
