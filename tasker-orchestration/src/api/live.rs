//! `GET /v1/tasks/{id}/events`: a task pushed to the browser as Server-Sent Events. A
//! `snapshot` event (`{"task", "steps", "history"}`) is sent at once and again whenever the task
//! changes, so the dashboard never polls.
//!
//! A change is a new transition (the id of the task's latest one, read through an index). It
//! is looked for when this orchestrator applies results or sweeps, and at least once a second,
//! which also catches what other orchestrators of a cluster did; at most every
//! [`MIN_GAP`] however busy the orchestrator is. The stream ends when the orchestrator stops.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::time::Instant;
use uuid::Uuid;

use super::extract::Path;
use super::{Error, fetch_task, parse_id};
use crate::events::Event;
use crate::shared::Shared;

/// Longest time between two looks.
const AT_LEAST_EVERY: Duration = Duration::from_secs(1);
/// Shortest time between two looks.
const MIN_GAP: Duration = Duration::from_millis(100);
/// Steps in a snapshot (the first page; a larger task's steps are read with `/steps`).
const STEPS_MAX: i64 = 1_000;
/// Transitions in a snapshot (the latest).
const HISTORY_MAX: i64 = 500;

struct Watch {
    shared: Shared,
    id: Uuid,
    events: broadcast::Receiver<Event>,
    /// The version last sent; `None` before the first snapshot.
    sent: Option<Option<i64>>,
    looked: Option<Instant>,
}

/// Server-Sent Events: a `snapshot` event `{task, steps (the first 1,000), more_steps, history
/// (the last 500)}` at once and again whenever the task changes.
#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = "tasks",
    params(("id" = uuid::Uuid, Path, description = "The task's id")),
    responses(
        (status = 200, description = "A stream of `snapshot` events", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid_id`", body = tasker_shared::api::ErrorBody),
        (status = 404, description = "`task_not_found`", body = tasker_shared::api::ErrorBody),
    ))]
pub(super) async fn task_events(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, Error> {
    let id = parse_id(&id)?;
    let events = shared.events.subscribe();
    fetch_task(&shared, id).await?;
    let watch = Watch {
        shared,
        id,
        events,
        sent: None,
        looked: None,
    };
    let stream = futures_util::stream::unfold(watch, |mut w| async move {
        loop {
            if w.looked.is_some() && !w.wait().await {
                return None;
            }
            w.looked = Some(Instant::now());
            match w.snapshot().await {
                Ok(Some(event)) => return Some((Ok(event), w)),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(task = %w.id, error = ?e, "live view: reading the task failed; trying again")
                }
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

impl Watch {
    /// Waits until it is time to look again; `false` when the orchestrator stops.
    async fn wait(&mut self) -> bool {
        let shutdown = self.shared.shutdown.clone();
        let tick = tokio::time::sleep(AT_LEAST_EVERY);
        tokio::pin!(tick);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = &mut tick => break,
                e = self.events.recv() => match e {
                    Ok(Event::ResultsApplied { .. } | Event::Swept | Event::TaskFinished { .. })
                    | Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Closed) => return false,
                },
            }
        }
        if let Some(at) = self.looked {
            let next = at + MIN_GAP;
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = tokio::time::sleep_until(next) => {}
            }
        }
        true
    }

    /// The snapshot to send, if the task changed since the last one.
    async fn snapshot(&mut self) -> Result<Option<SseEvent>, Error> {
        let store = &self.shared.store;
        if self.sent == Some(store.task_version(self.id).await?) {
            return Ok(None);
        }
        // History first, and the version it was read at is the one sent: the task and the
        // steps, read after it, are as new or newer, and a transition added meanwhile makes the
        // next look send again with it (a version read before the history could name one the
        // history lacks, and a snapshot would then repeat the last one). The task before its
        // steps: a task that ended commits with its last step, so a snapshot never shows an
        // ended task with a step still open (read the other way round, one did, in CI).
        let (history, version) = store.history_tail(self.id, HISTORY_MAX).await?;
        let task = fetch_task(&self.shared, self.id).await?;
        let page_bytes = self.shared.config.orchestrator.parent_page_bytes;
        let (steps, more) = store.steps(self.id, None, STEPS_MAX, page_bytes).await?;
        let body = json!({
            "task": task,
            "steps": steps,
            "more_steps": more.is_some(),
            "history": history,
        });
        self.sent = Some(version);
        Ok(Some(
            SseEvent::default().event("snapshot").data(body.to_string()),
        ))
    }
}
