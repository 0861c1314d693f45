//! `GET /v1/tasks/{id}/steps/{step}/inputs`: one attempt of a step as its handler received it,
//! for replaying it on a developer's machine (`tasker replay`, docs/testing.md).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use tasker_shared::api::{ErrorBody, StepInputs};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, parse_id};
use crate::shared::Shared;

/// `?attempt=` of `GET /v1/tasks/{id}/steps/{step}/inputs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct InputsQuery {
    /// The attempt, from 1 (the latest unless given).
    attempt: Option<u32>,
}

/// One attempt of a step as its handler received it: the task's context, the parent results,
/// the batch and the attempt, with the step's type, branches, retry policy and timeout, and its
/// latest error. What `tasker replay` runs the local handler on.
#[utoipa::path(get, path = "/v1/tasks/{id}/steps/{step}/inputs", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id"),
           ("step" = String, Path, description = "The step's name or id"), InputsQuery),
    responses(
        (status = 200, body = StepInputs),
        (status = 400, description = "`invalid_id`, `invalid_query` (an attempt the step has not reached)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token covers neither the task's namespace nor the step's", body = ErrorBody),
        (status = 404, description = "`task_not_found`, `step_not_found`", body = ErrorBody),
        (status = 409, description = "`not_replayable`: a wait or child step (no handler runs it), or a step that has not run", body = ErrorBody),
    ))]
pub(super) async fn step_inputs(
    State(shared): State<Shared>,
    caller: Caller,
    Path((id, step)): Path<(String, String)>,
    Query(q): Query<InputsQuery>,
) -> Result<Json<StepInputs>, Error> {
    let id = parse_id(&id)?;
    let inputs = shared.store.step_inputs(id, &step).await?;
    // A caller covering the step's own namespace (its workers' team) reads what its handler
    // read; anyone else needs the task's namespace, before learning whether the step exists.
    match &inputs {
        Some(i) if caller.covers(&i.namespace) => {}
        _ => caller.check_task(&shared, id).await?,
    }
    let mut inputs = inputs.ok_or_else(|| {
        Error::not_found("step_not_found", format!("task {id} has no step {step:?}"))
    })?;
    if inputs.handler.starts_with("tasker:") {
        return Err(Error::new(
            StatusCode::CONFLICT,
            "not_replayable",
            format!(
                "step {:?} is a {} step: the orchestrator resolves it, no handler runs it",
                inputs.step_name, inputs.step_type
            ),
        ));
    }
    if inputs.latest_attempt == 0 {
        return Err(Error::new(
            StatusCode::CONFLICT,
            "not_replayable",
            format!("step {:?} has not run yet", inputs.step_name),
        ));
    }
    if let Some(attempt) = q.attempt {
        if attempt == 0 || attempt > inputs.latest_attempt {
            return Err(Error::bad_request(
                "invalid_query",
                format!(
                    "`attempt` must be between 1 and {} (the step's latest attempt)",
                    inputs.latest_attempt
                ),
            ));
        }
        inputs.attempt = attempt;
    }
    Ok(Json(inputs))
}
