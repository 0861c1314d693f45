//! What an operator does to a saved schedule: pause it (with a note), resume it, trigger a
//! task now, backfill the fires of a past range.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use tasker_shared::api::{Backfill, Backfilled, ErrorBody, PauseSchedule, Schedule};

use super::access::Caller;
use super::extract::Path;
use super::schedules::{actor, bounded, check_reach, compiled, find, not_found, with_upcoming};
use super::{Error, fetch_task, json_body, optional_json_body, unknown_template};
use crate::executor;
use crate::scheduler;
use crate::shared::Shared;

/// Pauses a schedule (no fire until it is resumed), with a note saying why.
#[utoipa::path(post, path = "/v1/schedules/{namespace}/{name}/pause", operation_id = "pause_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    request_body(content = PauseSchedule, description = "Optional: a `note`"),
    responses(
        (status = 200, body = Schedule),
        (status = 400, description = "`invalid_json`, `invalid_note` (over 1,024 characters)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`", body = ErrorBody),
    ))]
pub(super) async fn pause(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Schedule>, Error> {
    let req: PauseSchedule = optional_json_body(&shared, body)?;
    if let Some(note) = &req.note
        && (note.chars().count() > 1024 || note.contains('\0'))
    {
        return Err(Error::bad_request(
            "invalid_note",
            "a pause note is at most 1,024 characters, without NUL",
        ));
    }
    caller.check(&namespace)?;
    let row = shared
        .store
        .set_schedule_paused(
            &namespace,
            &name,
            true,
            req.note.as_deref(),
            None,
            (actor(&caller).as_deref(), caller.token_id()),
        )
        .await?
        .ok_or_else(|| not_found(&namespace, &name))?;
    Ok(Json(Schedule::from(row)))
}

/// Resumes a paused schedule: it fires next at its first fire time from now (the time it was
/// paused is not caught up).
#[utoipa::path(post, path = "/v1/schedules/{namespace}/{name}/resume", operation_id = "resume_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses(
        (status = 200, body = Schedule),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`", body = ErrorBody),
    ))]
pub(super) async fn resume(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Schedule>, Error> {
    let row = find(&shared, &caller, &namespace, &name).await?;
    // From now on its fires are judged with the resuming token: it must reach what they do.
    check_reach(&shared, &caller, &row).await?;
    let next = compiled(&row.spec())?
        .0
        .next_after(shared.store.now().await?);
    let row = shared
        .store
        .set_schedule_paused(
            &namespace,
            &name,
            false,
            None,
            next,
            (actor(&caller).as_deref(), caller.token_id()),
        )
        .await?
        .ok_or_else(|| not_found(&namespace, &name))?;
    Ok(Json(with_upcoming(row)))
}

/// Starts a task of the schedule now, whatever its overlap policy.
#[utoipa::path(post, path = "/v1/schedules/{namespace}/{name}/trigger", operation_id = "trigger_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses(
        (status = 201, description = "The task started (header `location`: its URL)", body = tasker_shared::api::Task),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`, `unknown_template`", body = ErrorBody),
    ))]
pub(super) async fn trigger(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Response, Error> {
    let row = find(&shared, &caller, &namespace, &name).await?;
    check_reach(&shared, &caller, &row).await?;
    let Some((task, effects)) = scheduler::trigger(&shared, &row, caller.token_id()).await? else {
        return Err(unknown_template(
            &row.namespace,
            &row.template,
            row.version.as_deref(),
        ));
    };
    executor::execute(&shared, effects).await;
    let location = format!("/v1/tasks/{task}");
    let task = fetch_task(&shared, task).await?;
    Ok((StatusCode::CREATED, [("location", location)], Json(task)).into_response())
}

/// Starts a task for every fire time in `[from, to]` (at most 1,000), each with the idempotency
/// key a regular fire of that time has: a time that had its task keeps it.
#[utoipa::path(post, path = "/v1/schedules/{namespace}/{name}/backfill", operation_id = "backfill_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    request_body = Backfill,
    responses(
        (status = 200, body = Backfilled),
        (status = 400, description = "`invalid_json`, `invalid_range` (`to` before `from`), `backfill_too_large` (over 1,000 fire times)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`, `unknown_template`", body = ErrorBody),
        (status = 429, description = "`too_many_backfills`: the schedule was backfilled `orchestrator.max_backfills_per_hour` times in the last hour", body = ErrorBody),
    ))]
pub(super) async fn backfill(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Backfilled>, Error> {
    let req: Backfill = json_body(&shared, body)?;
    if req.to < req.from {
        return Err(Error::bad_request("invalid_range", "`to` is before `from`"));
    }
    let row = find(&shared, &caller, &namespace, &name).await?;
    check_reach(&shared, &caller, &row).await?;
    let (cron, _) = compiled(&row.spec())?;
    let range = (req.from, req.to);
    match scheduler::backfill(&shared, &row, &cron, range, caller.token_id()).await? {
        scheduler::Backfill::Done {
            created,
            existing,
            task_ids,
            effects,
        } => {
            executor::execute(&shared, *effects).await;
            Ok(Json(Backfilled {
                created,
                existing,
                task_ids,
            }))
        }
        scheduler::Backfill::TooLarge => Err(Error::bad_request(
            "backfill_too_large",
            format!(
                "the range holds more than {} fire times; backfill it in parts",
                scheduler::MAX_BACKFILL
            ),
        )),
        scheduler::Backfill::NoTemplate => Err(unknown_template(
            &row.namespace,
            &row.template,
            row.version.as_deref(),
        )),
        scheduler::Backfill::TooMany => {
            let max = shared.config.orchestrator.max_backfills_per_hour;
            Err(bounded(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_backfills",
                "orchestrator.max_backfills_per_hour",
                max as usize,
                format!(
                    "schedule {namespace}/{name} was backfilled {max} times in the last hour, \
                     the most a schedule may (orchestrator.max_backfills_per_hour); try later"
                ),
            ))
        }
    }
}
