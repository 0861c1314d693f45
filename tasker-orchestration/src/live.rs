//! The watcher every live event stream of an orchestrator shares (`GET /v1/tasks/{id}/events`,
//! the dashboard's task view): it looks for changes of all watched tasks at once — the id of each
//! one's latest transition, read through an index, in one statement — when this orchestrator
//! applies results or finishes a task, and at least once a second (which also catches what other
//! orchestrators of a cluster did), at most every `MIN_GAP`. A task that changed has its
//! snapshot read once and handed to all its streams, so a thousand streams on one task cost the
//! database what one does. Streams are capped in all and per token
//! (`orchestrator.max_event_streams`, `max_event_streams_per_token`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{Notify, broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::events::{Event, Events};
use crate::store::{self, Store};

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
#[derive(Debug)]
pub struct Subscription {
    live: Arc<Live>,
    task: Uuid,
    token: Option<String>,
    /// The task's latest snapshot as sent (`None` before the first look).
    pub snapshots: watch::Receiver<Snapshot>,
}

/// A stream refused: every stream this orchestrator serves, or this token may hold, is open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Full {
    pub message: String,
    pub max_total: usize,
    pub max_per_token: usize,
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

    /// A new stream of `task`'s snapshots, counted against the caps (`token`: whose).
    pub fn subscribe(
        self: &Arc<Self>,
        task: Uuid,
        token: Option<&str>,
    ) -> Result<Subscription, Full> {
        let mut w = self.lock();
        let full = |message: String| Full {
            message,
            max_total: self.max_total,
            max_per_token: self.max_per_token,
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

    /// Looks for changes of the watched tasks until `cancel` fires (see the module's doc);
    /// `page_bytes` bounds the steps a snapshot carries.
    pub async fn run(
        self: Arc<Self>,
        store: Store,
        events: Events,
        page_bytes: usize,
        cancel: CancellationToken,
    ) {
        let mut events = events.subscribe();
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
            if let Err(e) = self.look(&store, page_bytes).await {
                tracing::debug!(error = %e, "live view: reading the watched tasks failed; trying again");
            }
        }
    }

    /// One look: the versions of every watched task in one statement, then a snapshot of each
    /// that changed, handed to its streams.
    async fn look(&self, store: &Store, page_bytes: usize) -> store::Result<()> {
        let ids: Vec<Uuid> = self.lock().tasks.keys().copied().collect();
        if ids.is_empty() {
            return Ok(());
        }
        let versions = store.task_versions(&ids).await?;
        for (id, version) in versions {
            let seen = match self.lock().tasks.get(&id) {
                None => continue, // no longer watched
                Some(e) => e.version,
            };
            if seen == Some(version) {
                continue;
            }
            let Some((snapshot, read_at)) = snapshot(store, id, page_bytes).await? else {
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
async fn snapshot(
    store: &Store,
    id: Uuid,
    page_bytes: usize,
) -> store::Result<Option<(Arc<str>, Option<i64>)>> {
    let (history, version) = store.history_tail(id, HISTORY_MAX).await?;
    let Some(task) = store.task(id).await? else {
        return Ok(None);
    };
    let (mut steps, more) = store.steps(id, None, STEPS_MAX, page_bytes).await?;
    store.flag_unserved(&mut steps).await?;
    let body = json!({
        "task": task,
        "steps": steps,
        "more_steps": more.is_some(),
        "history": history,
    });
    Ok(Some((Arc::from(body.to_string()), version)))
}
