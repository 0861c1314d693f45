//! Retention routes: `GET /v1/retention` (the policy), `POST /v1/purge` (what the retention
//! policy does on its own, now, with a dry run), and the `410 task_purged` every task route answers for a purged id.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_shared::TaskState;
use tasker_shared::api::{ErrorBody, PurgeRequest, Purged, RetentionPolicy};
use tasker_shared::config::MIN_RETENTION;

use super::access::Caller;
use super::{Error, json_body};
use crate::shared::Shared;

/// Most tasks one request purges by default, and at most.
const DEFAULT_LIMIT: u32 = 10_000;
const MAX_LIMIT: u32 = 100_000;

/// The retention policy this orchestrator runs (`[retention]`: how long finished tasks of each
/// state are kept, the purge's pace) and when a task was last purged. Any token.
#[utoipa::path(get, path = "/v1/retention", tag = "retention", operation_id = "retention_policy",
    responses((status = 200, body = RetentionPolicy)))]
pub(super) async fn policy(State(shared): State<Shared>) -> Result<Json<RetentionPolicy>, Error> {
    let r = &shared.config.retention;
    Ok(Json(RetentionPolicy {
        complete: r.complete.clone(),
        error: r.error.clone(),
        cancelled: r.cancelled.clone(),
        tombstones: r.tombstones.clone(),
        audit: r.audit.clone(),
        interval_ms: r.interval_ms,
        batch: r.batch as u64,
        busy_percent: r.busy_percent,
        last_purged_at: shared.store.last_purged_at().await?,
    }))
}

/// Purges finished tasks now: those of the given states that finished longer ago than
/// `older_than` — never one that is unfinished or whose parent or child task is — with their
/// steps, edges, history, signals and dead letters, a batch per transaction; each leaves a
/// tombstone (`410 task_purged`). Admin scope, every namespace.
#[utoipa::path(post, path = "/v1/purge", tag = "retention", operation_id = "purge_tasks",
    request_body = PurgeRequest,
    responses(
        (status = 200, body = Purged),
        (status = 400, description = "`invalid_json`, `invalid_older_than` (not a duration, or under one hour), `invalid_state` (not complete, error or cancelled), `invalid_limit` (1 to 100,000)", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin token of every namespace", body = ErrorBody),
    ))]
pub(super) async fn purge(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Purged>, Error> {
    caller.require_unscoped("purging tasks")?;
    let req: PurgeRequest = json_body(&shared, body)?;
    let keep = tasker_shared::time::parse_duration("older_than", &req.older_than).map_err(|e| {
        Error::bad_request("invalid_older_than", format!("`older_than` {}", e.problem))
    })?;
    if keep < MIN_RETENTION {
        return Err(Error::bad_request(
            "invalid_older_than",
            format!(
                "`older_than` must be at least 1h (got {:?})",
                req.older_than
            ),
        ));
    }
    let states = match &req.states {
        None => vec![TaskState::Complete, TaskState::Error, TaskState::Cancelled],
        Some(list) => list
            .iter()
            .map(|s| {
                TaskState::parse(s)
                    .filter(|st| st.is_terminal())
                    .ok_or_else(|| {
                        Error::bad_request(
                            "invalid_state",
                            format!(
                                "{s:?} is not a finished state: use complete, error or cancelled"
                            ),
                        )
                        .with_details(json!({ "state": s }))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let limit = req.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::bad_request(
            "invalid_limit",
            format!("`limit` must be 1 to {MAX_LIMIT}"),
        ));
    }
    let before = chrono::Utc::now() - chrono::Duration::from_std(keep).unwrap_or_default();
    let cutoffs: Vec<_> = states.iter().map(|&s| (s, before)).collect();
    let mut answer = Purged {
        dry_run: req.dry_run,
        older_than: req.older_than.clone(),
        before,
        states: states.iter().map(|s| s.as_str().to_owned()).collect(),
        tasks: 0,
        by_state: Default::default(),
        rows: None,
        bytes: None,
        more: false,
    };
    if req.dry_run {
        // One more than the limit tells whether more remain.
        let mut counted = shared.store.purgeable(&cutoffs, limit + 1).await?;
        if counted.values().sum::<u64>() > u64::from(limit) {
            answer.more = true;
            counted = shared.store.purgeable(&cutoffs, limit).await?;
        }
        answer.tasks = counted.values().sum();
        answer.by_state = counted;
        return Ok(Json(answer));
    }
    // At the retention policy's pace: a purge on request shares the machine with the load as
    // the policy's does.
    let totals = crate::retention::purge(
        &shared.store,
        &cutoffs,
        u64::from(limit),
        crate::retention::Pace::of(&shared.config.retention),
        true,
        &CancellationToken::new(),
    )
    .await?;
    let by = caller.principal().map(|p| p.name.as_str());
    tracing::info!(tasks = totals.batch.tasks, older_than = %req.older_than, by, "tasks purged on request");
    answer.tasks = totals.batch.tasks;
    answer.by_state = totals.batch.by_state;
    answer.rows = Some(totals.batch.rows.values().sum());
    answer.bytes = Some(totals.batch.bytes);
    answer.more =
        answer.tasks >= u64::from(limit) && !shared.store.purgeable(&cutoffs, 1).await?.is_empty();
    Ok(Json(answer))
}

/// A route with a task id in its path that found no such task answers `410 task_purged`
/// instead when the id was purged (its tombstone lives on). Costs nothing but on a 404.
pub(super) async fn gone(
    State(shared): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let id = request
        .uri()
        .path()
        .strip_prefix("/v1/tasks/")
        .and_then(|rest| rest.split('/').next())
        .and_then(|id| Uuid::parse_str(id).ok());
    let response = next.run(request).await;
    let Some(id) = id.filter(|_| response.status() == StatusCode::NOT_FOUND) else {
        return response;
    };
    match purged(&shared, id).await {
        Some(gone) => {
            let mut gone = gone.into_response();
            // The route it took, for the request metrics.
            if let Some(route) = response
                .extensions()
                .get::<super::middleware::Route>()
                .cloned()
            {
                gone.extensions_mut().insert(route);
            }
            gone
        }
        None => response,
    }
}

/// `410 task_purged` for a task id the retention policy purged (its tombstone lives on); `None`
/// for one never seen, or when the tombstone cannot be read.
pub(super) async fn purged(shared: &Shared, id: Uuid) -> Option<Error> {
    let t = shared.store.tombstone(id).await.ok()??;
    Some(
        Error::new(
            StatusCode::GONE,
            "task_purged",
            format!(
                "task {id} ({}) was purged at {} by the retention policy; its record is gone",
                t.state,
                t.purged_at.to_rfc3339()
            ),
        )
        .with_details(json!({ "task_id": id, "state": t.state, "purged_at": t.purged_at })),
    )
}
