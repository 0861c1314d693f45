//! `GET /v1/tasks/{id}/events`: a task pushed to the browser as Server-Sent Events, and
//! `GET /v1/events?tasks=…`: several on one connection (what the dashboard's tabs share). A
//! `snapshot` event (`{"task", "steps", "history"}`) is sent at once and again whenever the task
//! changes, so the dashboard never polls. Every stream shares the orchestrator's one watcher
//! (`crate::live`); past its caps a stream is refused with 429 `too_many_streams`. Streams end
//! when the orchestrator stops.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, fetch_task, parse_id};
use crate::live::{Full, Subscription};
use crate::shared::Shared;

impl From<Full> for Error {
    fn from(full: Full) -> Self {
        Error::new(StatusCode::TOO_MANY_REQUESTS, "too_many_streams", full.message).with_details(
            json!({ "max_event_streams": full.max_total, "max_event_streams_per_token": full.max_per_token }),
        )
    }
}

/// Server-Sent Events: a `snapshot` event `{task, steps (the first 1,000), more_steps, history
/// (the last 500)}` at once and again whenever the task changes.
#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = "tasks",
    params(("id" = uuid::Uuid, Path, description = "The task's id")),
    responses(
        (status = 200, description = "A stream of `snapshot` events", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid_id`", body = tasker_shared::api::ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = tasker_shared::api::ErrorBody),
        (status = 404, description = "`task_not_found`", body = tasker_shared::api::ErrorBody),
        (status = 429, description = "`too_many_streams`: this orchestrator's, or this token's, streams are all open", body = tasker_shared::api::ErrorBody),
    ))]
pub(super) async fn task_events(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    fetch_task(&shared, id).await?;
    let token = caller.principal().map(|p| p.name.as_str());
    let subscription = shared.live.subscribe(id, token)?;
    Ok(Sse::new(snapshots(subscription, shared.shutdown.clone())).keep_alive(KeepAlive::default()))
}

/// A subscription's snapshots as `snapshot` events: the latest at once (another stream's, if
/// one was already read), then each new one, until the orchestrator stops.
fn snapshots(
    mut subscription: Subscription,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    subscription.snapshots.mark_changed();
    futures_util::stream::unfold((subscription, shutdown), |(mut sub, shutdown)| async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return None,
                changed = sub.snapshots.changed() => changed.ok()?,
            }
            let latest = sub.snapshots.borrow_and_update().clone();
            if let Some(snapshot) = latest {
                let event = SseEvent::default().event("snapshot").data(&*snapshot);
                return Some((Ok(event), (sub, shutdown)));
            }
        }
    })
}

/// Most tasks one stream of several watches.
const TASKS_MAX: usize = 100;

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ManyQuery {
    /// The tasks' ids, comma-separated (1 to 100).
    tasks: String,
}

/// Server-Sent Events of several tasks on one connection (the dashboard's tabs share one, so any
/// number of them stay live under the browser's six connections per host): each task's
/// `snapshot` (as `GET /v1/tasks/{id}/events` sends it; its `task.id` says which) at once and
/// whenever it changes, and a `missing` event `{task_id, error}` for a task that does not exist
/// or the token does not cover (the others are streamed all the same).
#[utoipa::path(get, path = "/v1/events", tag = "tasks", operation_id = "watch_tasks", params(ManyQuery),
    responses(
        (status = 200, description = "A stream of `snapshot` and `missing` events", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid_id`, `invalid_query`", body = tasker_shared::api::ErrorBody),
        (status = 429, description = "`too_many_streams`: this orchestrator's, or this token's, streams are all open", body = tasker_shared::api::ErrorBody),
    ))]
pub(super) async fn watch_tasks(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ManyQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, Error> {
    let mut ids = Vec::new();
    for id in q.tasks.split(',').filter(|s| !s.is_empty()) {
        let id = parse_id(id)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() || ids.len() > TASKS_MAX {
        return Err(Error::bad_request(
            "invalid_query",
            format!("`tasks`: 1 to {TASKS_MAX} task ids, comma-separated"),
        ));
    }
    let token = caller.principal().map(|p| p.name.as_str());
    let mut streams = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    for id in ids {
        let found = match caller.check_task(&shared, id).await {
            Ok(()) => fetch_task(&shared, id).await.map(|_| ()),
            Err(e) => Err(e),
        };
        // A purged task says so, as its own route would (410 `task_purged`).
        let found = match found {
            Err(e) if e.status() == StatusCode::NOT_FOUND => {
                Err(super::retention::purged(&shared, id).await.unwrap_or(e))
            }
            other => other,
        };
        match found {
            Ok(()) => streams.push(
                snapshots(shared.live.subscribe(id, token)?, shared.shutdown.clone()).boxed(),
            ),
            // Not there, or not the token's: said in the stream, the others streamed.
            Err(e)
                if matches!(
                    e.status(),
                    StatusCode::NOT_FOUND | StatusCode::FORBIDDEN | StatusCode::GONE
                ) =>
            {
                missing.push(
                    SseEvent::default()
                        .event("missing")
                        .data(json!({"task_id": id, "error": e.detail()}).to_string()),
                );
            }
            Err(e) => return Err(e),
        }
    }
    let first = futures_util::stream::iter(missing.into_iter().map(Ok));
    let merged = first.chain(futures_util::stream::select_all(streams));
    Ok(Sse::new(merged).keep_alive(KeepAlive::default()))
}
