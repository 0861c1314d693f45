//! The handler host for FFI bindings (Ruby, Python, TypeScript). Steps wait in priority lanes
//! ([`crate::lanes`]); the
//! language side takes them in batches with a blocking [`BatchHost::next_batch`] (called with
//! the GIL/GVL released), the async [`BatchHost::next_batch_async`], or, told by the hook it
//! gave [`BatchHost::on_ready`], with [`BatchHost::try_take`] (Node's event loop); it runs its
//! handlers and returns outcomes with [`BatchHost::complete`]. All I/O stays in the core.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tasker_shared::{Outcome, StepMessage};

use crate::host::{Completion, CompletionSink, HandlerHost, Job};
use crate::lanes::Lanes;

/// A job as the language side sees it (serialized to JSON across the boundary): the step
/// message's fields (`task_id`, `step_id`, `step_name`, `handler`, `attempt`, `context`,
/// `parent_results`, `input`, `timeout_ms`, …) plus the job `id` to echo back in the outcome.
#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    pub id: u64,
    #[serde(flatten)]
    pub step: StepMessage,
}

/// An outcome reported by the language side:
/// `{"id": 7, "status": "success", "result": …}` or
/// `{"id": 7, "status": "failure", "retryable": true, "error": {"kind", "message", "backtrace"}}`,
/// with the handler's `started_at` and `finished_at` as seconds since the Unix epoch (a number:
/// `time.time()`, `Date.now() / 1000`) or RFC 3339 text. The core takes the time it handed the
/// job out, and the time of the report, for one left out.
#[derive(Debug, Clone, Deserialize)]
pub struct OutcomeView {
    pub id: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(default, deserialize_with = "instant")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "instant")]
    pub finished_at: Option<DateTime<Utc>>,
}

/// An outcome's timestamp: epoch seconds (cheap for the language side to take; formatting a
/// date costs a handler thread more than the rest of its report) or RFC 3339 text.
fn instant<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stamp {
        Seconds(f64),
        Text(DateTime<Utc>),
    }
    match Option::<Stamp>::deserialize(d)? {
        None => Ok(None),
        Some(Stamp::Text(t)) => Ok(Some(t)),
        Some(Stamp::Seconds(s)) => {
            let micros = (s * 1e6).round();
            // Within chrono's range (and finite): anything else is not a time.
            (micros.is_finite() && micros.abs() < 8.0e18)
                .then(|| DateTime::from_timestamp_micros(micros as i64))
                .flatten()
                .map(Some)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "{s} is not a time in seconds since the epoch"
                    ))
                })
        }
    }
}

/// Errors of the batch interface.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid outcome JSON: {0}")]
    InvalidOutcome(#[from] serde_json::Error),
    #[error("the worker is stopped")]
    Stopped,
}

/// A job handed out to the language side.
struct Held {
    /// Reported as its start if the language side sends none.
    at: DateTime<Utc>,
    /// When the core fails it as timed out (the worker's run deadline, counted from the same
    /// instant); [`BatchHost::holds`] says `false` from then on.
    deadline: Instant,
    /// Its task's priority, given back to the lanes when it is reported.
    priority: Option<tasker_shared::flow::Priority>,
    /// What its handler streams with.
    emitter: Option<crate::stream::Emitter>,
}

/// What [`BatchHost::on_ready`] calls.
type ReadyHook = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    /// Jobs not handed out yet, high priority first (with aging).
    queue: Lanes<(Job, DateTime<Utc>)>,
    sink: Option<CompletionSink>,
    /// Handed-out jobs not reported yet.
    started: std::collections::HashMap<u64, Held>,
    /// No job is handed out any more (the worker is draining or stopped); outcomes of jobs
    /// handed out before are still taken.
    closed: bool,
    ready_hook: Option<ReadyHook>,
}

/// Queue-backed host; cheap to share behind an `Arc`.
#[derive(Default)]
pub struct BatchHost {
    state: Mutex<State>,
    ready: Condvar,
    ready_async: tokio::sync::Notify,
}

impl std::fmt::Debug for BatchHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchHost").finish_non_exhaustive()
    }
}

impl HandlerHost for BatchHost {
    fn submit(&self, jobs: Vec<Job>, done: &CompletionSink) {
        let now = Utc::now();
        let mut state = self.lock();
        state.sink = Some(done.clone());
        if state.closed {
            jobs.iter().for_each(|j| done.unstarted(j.id));
            return;
        }
        let n = jobs.len();
        for j in jobs {
            state.queue.push(j.message.priority, (j, now));
        }
        let hook = state.ready_hook.clone();
        drop(state);
        call(hook);
        // One waiter a job, not all of them: Python's and Ruby's handler threads each wait for
        // one job, and all of them waking for each would contend for two cores.
        for _ in 0..n {
            self.ready.notify_one();
        }
        self.ready_async.notify_waiters();
    }

    fn drain(&self, done: &CompletionSink) {
        let mut state = self.lock();
        state.closed = true;
        for (job, _) in state.queue.drain() {
            done.unstarted(job.id);
        }
        let hook = state.ready_hook.clone();
        drop(state);
        self.wake_all(hook);
    }
}

/// Calls the ready hook, if one was given (never with the host's lock held).
fn call(hook: Option<ReadyHook>) {
    if let Some(hook) = hook {
        hook();
    }
}

impl BatchHost {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how much longer a job must have waited to go ahead of one a priority level above
    /// it (`worker.priority_aging_ms`), and how many low-priority jobs may be out (handed out,
    /// not reported) at once (`WorkerConfig::low_priority_cap`).
    pub fn with_priorities(self, aging: Duration, low_cap: Option<usize>) -> Self {
        {
            let mut state = self.lock();
            state.queue.set_aging(aging);
            state.queue.set_low_cap(low_cap);
        }
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to `timeout` for at least one job and returns up to `max`. An empty batch
    /// means the wait ran out (or the host stopped: see [`BatchHost::is_stopped`]).
    pub fn next_batch(&self, max: usize, timeout: Duration) -> Vec<JobView> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while !state.queue.ready() && !state.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Vec::new();
            }
            state = self
                .ready
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Self::take(&mut state, max)
    }

    /// Up to `max` queued jobs, without waiting (none if none is queued or the host stopped).
    pub fn try_take(&self, max: usize) -> Vec<JobView> {
        let mut state = self.lock();
        if state.closed {
            // What is still queued goes back to its queue with the drain.
            return Vec::new();
        }
        Self::take(&mut state, max)
    }

    /// Has `hook` called, on the core's thread and without the host's lock held, each time
    /// jobs are queued and when the host stops: a language whose thread must not block (Node's
    /// event loop) is told, and takes them with [`BatchHost::try_take`], instead of waiting in
    /// [`BatchHost::next_batch_async`] on another thread. The hook must return at once. Replaces
    /// an earlier hook.
    pub fn on_ready(&self, hook: impl Fn() + Send + Sync + 'static) {
        self.lock().ready_hook = Some(Arc::new(hook));
    }

    /// Async form of [`BatchHost::next_batch`] for event-loop languages.
    pub async fn next_batch_async(&self, max: usize, timeout: Duration) -> Vec<JobView> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.ready_async.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if state.queue.ready() || state.closed {
                    return Self::take(&mut state, max);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    fn take(state: &mut State, max: usize) -> Vec<JobView> {
        let jobs: Vec<(Job, DateTime<Utc>)> = state.queue.take(max.max(1));
        if !jobs.is_empty() {
            ::metrics::histogram!(crate::metrics::FFI_BATCH_SIZE.name).record(jobs.len() as f64);
        }
        let (now, instant) = (Utc::now(), Instant::now());
        let mut out = Vec::with_capacity(jobs.len());
        for (job, _) in jobs {
            if let Some(sink) = &state.sink {
                sink.started(job.id);
            }
            let deadline = instant + crate::worker::run_deadline(job.message.timeout_ms);
            let priority = job.message.priority;
            state.started.insert(
                job.id,
                Held {
                    at: now,
                    deadline,
                    priority,
                    emitter: job.emitter,
                },
            );
            out.push(JobView {
                id: job.id,
                step: job.message,
            });
        }
        out
    }

    /// Reports outcomes. Unknown or late job ids are ignored by the core.
    pub fn complete(&self, outcomes: Vec<OutcomeView>) -> Result<(), Error> {
        let now = Utc::now();
        let mut state = self.lock();
        let sink = state.sink.clone().ok_or(Error::Stopped)?;
        let was_ready = state.queue.ready();
        for o in outcomes {
            let held = state.started.remove(&o.id);
            if let Some(h) = &held {
                state.queue.release(h.priority);
            }
            sink.complete(Completion {
                job: o.id,
                outcome: o.outcome,
                started_at: o.started_at.unwrap_or(held.map_or(now, |h| h.at)),
                finished_at: o.finished_at.unwrap_or(now),
            });
        }
        // Low jobs waiting at their cap may go out now.
        let freed = !was_ready && state.queue.ready() && !state.closed;
        let hook = state.ready_hook.clone();
        drop(state);
        if freed {
            self.wake_all(hook);
        }
        Ok(())
    }

    /// [`BatchHost::complete`] from a JSON array of outcomes.
    pub fn complete_json(&self, json: &str) -> Result<(), Error> {
        self.complete(serde_json::from_str(json)?)
    }

    /// Sends a chunk of a handed-out job's stream (the bindings' `ctx.emit`): `payload` is the
    /// text itself when `text`, else JSON. Never waits; see [`crate::StepContext::emit`].
    pub fn emit(
        &self,
        job: u64,
        topic: &str,
        payload: &str,
        text: bool,
    ) -> Result<(), crate::stream::StreamError> {
        use crate::stream::StreamError;
        let emitter = self
            .lock()
            .started
            .get(&job)
            .and_then(|h| h.emitter.clone())
            .ok_or(StreamError::Ended)?;
        if text {
            return emitter.emit_text(topic, payload);
        }
        let data = serde_json::from_str(payload)
            .map_err(|e| StreamError::Invalid(format!("its data is not JSON: {e}")))?;
        emitter.emit(topic, data)
    }

    /// Whether `job` was handed out, is not reported yet and is within its step's timeout:
    /// the core still takes its outcome. Forgets a job past its timeout (the core has failed
    /// it; a late outcome is ignored either way).
    pub fn holds(&self, job: u64) -> bool {
        let mut state = self.lock();
        match state.started.get(&job) {
            Some(held) if Instant::now() < held.deadline => true,
            Some(_) => {
                if let Some(h) = state.started.remove(&job) {
                    state.queue.release(h.priority);
                }
                false
            }
            None => false,
        }
    }

    /// Wakes every waiter (and calls the ready hook); later waits return at once with an empty
    /// batch.
    pub fn stop(&self) {
        let hook = {
            let mut state = self.lock();
            state.closed = true;
            state.ready_hook.clone()
        };
        self.wake_all(hook);
    }

    /// Wakes every waiter of every kind: the host stopped handing jobs out.
    fn wake_all(&self, hook: Option<ReadyHook>) {
        self.ready.notify_all();
        self.ready_async.notify_waiters();
        call(hook);
    }

    /// Whether no job will be handed out any more (the worker is stopping or stopped): the
    /// language side finishes what it holds and takes no more batches.
    pub fn is_stopped(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests;
