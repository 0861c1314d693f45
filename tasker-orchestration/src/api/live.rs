//! `GET /v1/tasks/{id}/events`: a task pushed to the browser as Server-Sent Events. A
//! `snapshot` event (`{"task", "steps", "history"}`) is sent at once and again whenever the task
//! changes, so the dashboard never polls. Every stream shares the orchestrator's one watcher
//! (`crate::live`); past its caps a stream is refused with 429 `too_many_streams`. Streams end
//! when the orchestrator stops.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;

use super::access::Caller;
use super::extract::Path;
use super::{Error, fetch_task, parse_id};
use crate::live::Full;
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
    let mut subscription = shared.live.subscribe(id, token)?;
    // The first snapshot already there (another stream's) goes out at once.
    subscription.snapshots.mark_changed();
    let shutdown = shared.shutdown.clone();
    let stream =
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
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
