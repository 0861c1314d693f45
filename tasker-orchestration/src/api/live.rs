//! `GET /v1/tasks/{id}/events`: a task pushed to the browser as Server-Sent Events. A
//! `snapshot` event (`{"task", "steps", "history"}`) is sent at once and again whenever the task
//! changes, so the dashboard never polls.
//!
//! Every stream of an orchestrator shares one watcher ([`Live`]): it looks for changes of all
//! watched tasks at once — the id of each one's latest transition, read through an index, in one
//! statement — when this orchestrator applies results or finishes a task, and at least once a second
//! (which also catches what other orchestrators of a cluster did), at most every [`MIN_GAP`].
//! A task that changed has its snapshot read once and handed to all its streams. So a thousand
//! streams on one task cost the database what one does. Streams are capped in all and per token
//! (`orchestrator.max_event_streams`, `max_event_streams_per_token`: 429 `too_many_streams`),
//! and end when the orchestrator stops.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::{Notify, broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::access::Caller;
use super::extract::Path;
use super::{Error, fetch_task, parse_id};
use crate::events::Event;
use crate::shared::Shared;

/// Longest time between two looks while a task is watched.
const AT_LEAST_EVERY: Duration = Duration::from_secs(1);
/// Shortest time between two looks.
const MIN_GAP: Duration = Duration::from_millis(100);
/// Steps in a snapshot (the first page; a larger task's steps are read with `/steps`).
const STEPS_MAX: i64 = 1_000;
/// Transitions in a snapshot (the latest).
const HISTORY_MAX: i64 = 500;

/// A task's latest snapshot, as sent (`None` until the first look).
type Snapshot = Option<Arc<str>>;

/// The watcher every stream of this orchestrator shares.
#[derive(Debug)]
pub struct Live {
    state: Mutex<Watched>,
    /// A task is watched that was not before: look now.
    wake: Notify,
    max_total: usize,
    max_per_token: usize,
}

#[derive(Debug, Default)]
struct Watched {
    tasks: HashMap<Uuid, Entry>,
    open: usize,
    by_token: HashMap<String, usize>,
}

#[derive(Debug)]
struct Entry {
    snapshot: watch::Sender<Snapshot>,
    /// The version (latest transition id) the snapshot was read at; `None` before the first.
    version: Option<Option<i64>>,
    streams: usize,
}

/// One open stream: its place in the caps and its task's snapshots.
struct Subscription {
    live: Arc<Live>,
    task: Uuid,
    token: Option<String>,
    snapshots: watch::Receiver<Snapshot>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut w = self.live.lock();
        w.open -= 1;
        if let Some(t) = &self.token
            && let Some(n) = w.by_token.get_mut(t)
        {
            *n -= 1;
            if *n == 0 {
                w.by_token.remove(t);
            }
        }
        if let Some(e) = w.tasks.get_mut(&self.task) {
            e.streams -= 1;
            if e.streams == 0 {
                w.tasks.remove(&self.task);
            }
        }
    }
}

impl Live {
    pub fn new(config: &tasker_shared::config::OrchestratorConfig) -> Self {
        Live {
            state: Mutex::default(),
            wake: Notify::new(),
            max_total: config.max_event_streams,
            max_per_token: config.max_event_streams_per_token,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.lock().open
    }

    fn subscribe(self: &Arc<Self>, task: Uuid, token: Option<&str>) -> Result<Subscription, Error> {
        let mut w = self.lock();
        let full = |what: String| {
            Error::new(StatusCode::TOO_MANY_REQUESTS, "too_many_streams", what)
                .with_details(json!({ "max_event_streams": self.max_total, "max_event_streams_per_token": self.max_per_token }))
        };
        if w.open >= self.max_total {
            return Err(full(format!(
                "{} live event streams are open, the most this orchestrator serves; close one",
                w.open
            )));
        }
        if let Some(t) = token
            && w.by_token.get(t).copied().unwrap_or(0) >= self.max_per_token
        {
            return Err(full(format!(
                "token {t:?} has {} live event streams open, the most one token may; close one",
                self.max_per_token
            )));
        }
        w.open += 1;
        if let Some(t) = token {
            *w.by_token.entry(t.to_owned()).or_default() += 1;
        }
        let mut new = false;
        let entry = w.tasks.entry(task).or_insert_with(|| {
            new = true;
            Entry {
                snapshot: watch::Sender::new(None),
                version: None,
                streams: 0,
            }
        });
        entry.streams += 1;
        let snapshots = entry.snapshot.subscribe();
        drop(w);
        if new {
            self.wake.notify_one();
        }
        Ok(Subscription {
            live: self.clone(),
            task,
            token: token.map(str::to_owned),
            snapshots,
        })
    }

    /// Looks for changes of the watched tasks until `cancel` fires (see the module's doc).
    pub async fn run(self: Arc<Self>, shared: Shared, cancel: CancellationToken) {
        let mut events = shared.events.subscribe();
        let mut looked: Option<Instant> = None;
        loop {
            let watching = !self.lock().tasks.is_empty();
            let tick = tokio::time::sleep(AT_LEAST_EVERY);
            tokio::pin!(tick);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = self.wake.notified() => break,
                    () = &mut tick, if watching => break,
                    e = events.recv(), if watching => match e {
                        // (A sweep's changes reach the engine as results, or are seen at the
                        // next tick: every sweep round would otherwise cost a look.)
                        Ok(Event::ResultsApplied { .. } | Event::TaskFinished { .. })
                        | Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                }
            }
            if let Some(at) = looked {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep_until(at + MIN_GAP) => {}
                }
            }
            looked = Some(Instant::now());
            if let Err(e) = self.look(&shared).await {
                tracing::debug!(error = ?e, "live view: reading the watched tasks failed; trying again");
            }
        }
    }

    /// One look: the versions of every watched task in one statement, then a snapshot of each
    /// that changed, handed to its streams.
    async fn look(&self, shared: &Shared) -> Result<(), Error> {
        let ids: Vec<Uuid> = self.lock().tasks.keys().copied().collect();
        if ids.is_empty() {
            return Ok(());
        }
        let versions = shared.store.task_versions(&ids).await?;
        for (id, version) in versions {
            let seen = match self.lock().tasks.get(&id) {
                None => continue, // no longer watched
                Some(e) => e.version,
            };
            if seen == Some(version) {
                continue;
            }
            let Some((snapshot, read_at)) = snapshot(shared, id).await? else {
                continue;
            };
            if let Some(e) = self.lock().tasks.get_mut(&id) {
                e.version = Some(read_at);
                e.snapshot.send_replace(Some(snapshot));
            }
        }
        Ok(())
    }
}

/// A task's snapshot as sent, and the version it was read at; `None` if there is no such task.
///
/// History first, and the version it was read at is the one recorded: the task and the steps,
/// read after it, are as new or newer, and a transition added meanwhile makes the next look
/// send again with it (a version read before the history could name one the history lacks, and
/// a snapshot would then repeat the last one). The task before its steps: a task that ended
/// commits with its last step, so a snapshot never shows an ended task with a step still open.
async fn snapshot(shared: &Shared, id: Uuid) -> Result<Option<(Arc<str>, Option<i64>)>, Error> {
    let store = &shared.store;
    let (history, version) = store.history_tail(id, HISTORY_MAX).await?;
    let Some(task) = store.task(id).await? else {
        return Ok(None);
    };
    let page_bytes = shared.config.orchestrator.parent_page_bytes;
    let (steps, more) = store.steps(id, None, STEPS_MAX, page_bytes).await?;
    let body = json!({
        "task": task,
        "steps": steps,
        "more_steps": more.is_some(),
        "history": history,
    });
    Ok(Some((Arc::from(body.to_string()), version)))
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
