//! The workers registry: workers report who they are and what they serve; anyone who may read
//! sees who is up (`tasker workers`, the dashboard's Workers page).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use tasker_shared::api::{
    ErrorBody, RunningRecorded, RunningReport, WorkerInfo, WorkerList, WorkerReport,
};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, json_body, parse_id};
use crate::shared::Shared;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Also the workers that left or missed three heartbeats (seen in the last day).
    all: Option<bool>,
}

/// The live workers (those that reported within their last three heartbeats), by name; a token
/// scoped to namespaces sees the workers that serve one of them (a worker serving none is shown
/// to tokens of every namespace only).
#[utoipa::path(get, path = "/v1/workers", tag = "workers", operation_id = "list_workers", params(ListQuery),
    responses(
        (status = 200, body = WorkerList),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<WorkerList>, Error> {
    let workers = shared
        .store
        .workers(q.all.unwrap_or(false))
        .await?
        .into_iter()
        .filter(|w| {
            caller.namespace_regex().is_none() || w.namespaces.iter().any(|ns| caller.covers(ns))
        })
        .collect();
    Ok(Json(WorkerList { workers }))
}

/// A worker reports itself: at start and at every heartbeat (the worker core does it).
#[utoipa::path(put, path = "/v1/workers/{id}", tag = "workers", operation_id = "report_worker",
    params(("id" = Uuid, Path, description = "The worker's id, chosen by the worker at start")),
    request_body = WorkerReport,
    responses(
        (status = 200, body = WorkerInfo),
        (status = 400, description = "`invalid_id`, `invalid_json`, `invalid_worker`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover a namespace reported, or another token reported this worker", body = ErrorBody),
    ))]
pub(super) async fn report(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<WorkerInfo>, Error> {
    let id = parse_id(&id)?;
    let report: WorkerReport = json_body(&shared, body)?;
    check(&report)?;
    for ns in &report.namespaces {
        caller.check(ns)?;
    }
    match shared
        .store
        .report_worker(id, &report, caller.principal())
        .await?
    {
        Some(info) => Ok(Json(info)),
        None => Err(caller.forbidden(format!("worker {id} was reported with another token"))),
    }
}

/// A worker leaves (it stops): it is no longer live.
#[utoipa::path(delete, path = "/v1/workers/{id}", tag = "workers", operation_id = "leave_worker",
    params(("id" = Uuid, Path, description = "The worker's id")),
    responses(
        (status = 204, description = "Left"),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 404, description = "`worker_not_found` (or reported with another token)", body = ErrorBody),
    ))]
pub(super) async fn leave(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    let id = parse_id(&id)?;
    if shared.store.leave_worker(id, caller.principal()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Error::not_found(
            "worker_not_found",
            format!("no worker {id} of this token's"),
        ))
    }
}

/// Most attempts in one running report.
const RUNNING_MAX: usize = 10_000;

/// A worker reports the step attempts its handlers have been running for a while (the worker
/// core does it every `worker.running_report_ms`): each is shown `running` with the worker's
/// name, and gets a `running` transition in its task's history. The worker core also reports a
/// step it was handed again (a redelivery, a re-send) before running it: the answer's `over`
/// lists those whose attempt has ended, which it does not run.
#[utoipa::path(post, path = "/v1/workers/{id}/running", tag = "workers", operation_id = "report_running",
    params(("id" = Uuid, Path, description = "The worker's id (as reported with `PUT /v1/workers/{id}`)")),
    request_body = RunningReport,
    responses(
        (status = 200, body = RunningRecorded),
        (status = 400, description = "`invalid_id`, `invalid_json`, `invalid_report`", body = ErrorBody),
        (status = 404, description = "`worker_not_found` (not reported yet, or reported with another token)", body = ErrorBody),
    ))]
pub(super) async fn running(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<RunningRecorded>, Error> {
    let id = parse_id(&id)?;
    let report: RunningReport = json_body(&shared, body)?;
    if report.steps.len() > RUNNING_MAX {
        return Err(Error::bad_request(
            "invalid_report",
            format!("at most {RUNNING_MAX} steps per report"),
        ));
    }
    let covers = caller.namespace_regex();
    match shared
        .store
        .record_running(id, caller.principal(), covers.as_deref(), &report.steps)
        .await?
    {
        Some((recorded, over)) => {
            ::metrics::counter!(crate::metrics::STEPS_RUNNING_REPORTED.name).increment(recorded);
            Ok(Json(RunningRecorded { recorded, over }))
        }
        None => Err(Error::not_found(
            "worker_not_found",
            format!("no worker {id} of this token's: report it first (PUT /v1/workers/{id})"),
        )),
    }
}

/// A report's fields within the registry's bounds.
fn check(r: &WorkerReport) -> Result<(), Error> {
    let text = |field: &str, value: &str, max: usize| {
        if value.is_empty() && field != "host"
            || value.chars().count() > max
            || value.chars().any(char::is_control)
        {
            Err(Error::bad_request(
                "invalid_worker",
                format!("`{field}` must be 1 to {max} characters, none of them control characters"),
            ))
        } else {
            Ok(())
        }
    };
    text("name", &r.name, 256)?;
    text("language", &r.language, 64)?;
    text("version", &r.version, 64)?;
    text("host", &r.host, 256)?;
    for (field, list) in [("namespaces", &r.namespaces), ("handlers", &r.handlers)] {
        if list.len() > 4096 {
            return Err(Error::bad_request(
                "invalid_worker",
                format!("`{field}`: at most 4096 entries"),
            ));
        }
        for v in list {
            text(field, v, 256)?;
        }
    }
    if r.concurrency < 0 || r.heartbeat_ms <= 0 {
        return Err(Error::bad_request(
            "invalid_worker",
            "`concurrency` must be at least 0 and `heartbeat_ms` at least 1",
        ));
    }
    Ok(())
}
