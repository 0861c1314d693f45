//! The seam between the worker core and handler code. The core hands a [`HandlerHost`] a
//! batch of [`Job`]s and receives each one's [`Completion`] through a [`CompletionSink`].
//! [`RustHost`] runs native handlers on tokio; FFI bindings implement the same trait with a
//! queue their language drains in batches (`next_batch` / `complete_batch`).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use tokio::sync::{Semaphore, mpsc};

use tasker_shared::{Outcome, StepError, StepMessage};

use crate::handler::{ParentResults, Registry, StepContext};
use crate::lanes::Lanes;
use crate::references::ParentSource;
use crate::stream::Emitter;

/// One step attempt handed to a host.
#[derive(Debug, Clone)]
pub struct Job {
    /// Unique within this worker process; echoed back in the completion.
    pub id: u64,
    pub message: StepMessage,
    /// Where to read the parent results the message carries by reference
    /// (`message.parent_results_by_reference`); FFI hosts read them through
    /// [`crate::embedded::EmbeddedWorker::parent_results_page`] instead.
    pub parents: Option<ParentSource>,
    /// What its handler streams with (`ctx.emit`); `None` where nothing takes a stream (a host
    /// driven without a worker, in tests).
    pub emitter: Option<Emitter>,
}

impl Job {
    pub fn new(id: u64, message: StepMessage) -> Self {
        Self {
            id,
            message,
            parents: None,
            emitter: None,
        }
    }

    /// The job, its handler streaming with `emitter`.
    pub fn streaming(mut self, emitter: Emitter) -> Self {
        self.emitter = Some(emitter);
        self
    }
}

/// The outcome of one job.
#[derive(Debug, Clone)]
pub struct Completion {
    pub job: u64,
    pub outcome: Outcome,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
}

/// What a host tells the core about a job.
#[derive(Debug, Clone)]
pub enum Report {
    /// A handler has begun running the job: its timeout counts from now. Time spent waiting
    /// for a free handler slot does not count.
    Started(u64),
    Done(Completion),
    /// The host stopped (draining) before a handler took the job, and never will: its step
    /// goes back to its queue.
    Unstarted(u64),
    /// The job was a copy of an attempt that had already ended (the core asked the
    /// orchestrator before handing it over): acknowledged, never run.
    Over(u64),
}

/// Where hosts report. Cheap to clone; sending never blocks.
#[derive(Debug, Clone)]
pub struct CompletionSink(mpsc::UnboundedSender<Report>);

impl CompletionSink {
    pub fn channel() -> (CompletionSink, mpsc::UnboundedReceiver<Report>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (CompletionSink(tx), rx)
    }

    /// Reports that a handler started `job`.
    pub fn started(&self, job: u64) {
        let _ = self.0.send(Report::Started(job));
    }

    /// Reports a job's completion. A completion for a job the core no longer tracks (it timed
    /// out, or the connection was lost) is ignored.
    pub fn complete(&self, completion: Completion) {
        let _ = self.0.send(Report::Done(completion));
    }

    /// Reports that `job` will not be started.
    pub fn unstarted(&self, job: u64) {
        let _ = self.0.send(Report::Unstarted(job));
    }

    /// Reports that `job` is a copy of an attempt that has ended.
    pub(crate) fn over(&self, job: u64) {
        let _ = self.0.send(Report::Over(job));
    }
}

/// Runs handlers.
pub trait HandlerHost: Send + Sync + 'static {
    /// Takes a batch of jobs; must eventually report each through `done` (the core times out
    /// jobs that never report).
    fn submit(&self, jobs: Vec<Job>, done: &CompletionSink);

    /// The worker is stopping: start no job from now on. Each job not yet started (and each
    /// submitted later) is reported [`Report::Unstarted`]; jobs already running finish and
    /// report as usual.
    fn drain(&self, done: &CompletionSink);
}

/// Runs native Rust handlers, each job on its own tokio task, at most `concurrency` at once;
/// jobs waiting for a slot start high priority first ([`crate::lanes`]). A panicking handler
/// fails its step (retryably); the worker keeps running.
#[derive(Debug, Clone)]
pub struct RustHost {
    registry: Arc<Registry>,
    permits: Arc<Semaphore>,
    waiting: Arc<Mutex<Lanes<Job>>>,
    draining: Arc<AtomicBool>,
}

impl RustHost {
    pub fn new(registry: Registry, concurrency: usize) -> Self {
        Self {
            registry: Arc::new(registry),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            waiting: Arc::default(),
            draining: Arc::default(),
        }
    }

    /// Sets how much longer a job must have waited to go ahead of one a priority level above
    /// it (`worker.priority_aging_ms`), and how many low-priority jobs may run at once
    /// (`WorkerConfig::low_priority_cap`).
    pub fn with_priorities(self, aging: std::time::Duration, low_cap: Option<usize>) -> Self {
        let mut lanes = self.lanes();
        lanes.set_aging(aging);
        lanes.set_low_cap(low_cap);
        drop(lanes);
        self
    }

    fn lanes(&self) -> std::sync::MutexGuard<'_, Lanes<Job>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts waiting jobs while slots are free. Called after jobs are queued and after each
    /// job ends (its slot given back first), so no job waits while a slot is free.
    fn pump(&self, done: &CompletionSink) {
        loop {
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                return;
            };
            let Some(job) = self.lanes().pop() else {
                return;
            };
            if self.draining.load(Ordering::Acquire) {
                done.unstarted(job.id);
                continue;
            }
            let host = self.clone();
            let done = done.clone();
            tokio::spawn(async move {
                done.started(job.id);
                let started_at = Utc::now();
                let priority = job.message.priority;
                let id = job.id;
                let outcome = run_one(&host.registry, job).await;
                done.complete(Completion {
                    job: id,
                    outcome,
                    started_at,
                    finished_at: Utc::now(),
                });
                host.lanes().release(priority);
                drop(permit);
                host.pump(&done);
            });
        }
    }
}

impl HandlerHost for RustHost {
    fn submit(&self, jobs: Vec<Job>, done: &CompletionSink) {
        if self.draining.load(Ordering::Acquire) {
            return jobs.iter().for_each(|j| done.unstarted(j.id));
        }
        {
            let mut lanes = self.lanes();
            for job in jobs {
                lanes.push(job.message.priority, job);
            }
        }
        self.pump(done);
    }

    fn drain(&self, done: &CompletionSink) {
        // Jobs waiting for a slot are reported unstarted now; those running finish.
        self.draining.store(true, Ordering::Release);
        let waiting = self.lanes().drain();
        for job in waiting {
            done.unstarted(job.id);
        }
    }
}

pub(crate) async fn run_one(registry: &Registry, job: Job) -> Outcome {
    let Some(handler) = registry.get(&job.message.handler) else {
        return unknown_handler(&job.message.handler);
    };
    let timeout_ms = job.message.timeout_ms;
    let mut ctx = StepContext::from(job.message);
    ctx.stream = job.emitter;
    if let Some(source) = job.parents {
        ctx.parent_results = ParentResults::from_source(source);
    }
    let call = AssertUnwindSafe(handler.call(ctx)).catch_unwind();
    match tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), call).await {
        Err(_) => timed_out(timeout_ms),
        Ok(Err(panic)) => {
            Outcome::failure(StepError::new("panic", panic_message(panic.as_ref())), true)
        }
        Ok(Ok(Ok(result))) => Outcome::Success { result },
        Ok(Ok(Err(e))) => e.into(),
    }
}

/// The outcome for a step whose handler no host knows: permanent, so the task fails with a
/// clear error instead of retrying a step that can never run here.
pub fn unknown_handler(name: &str) -> Outcome {
    Outcome::permanent(
        "unknown_handler",
        format!("no handler named {name:?} is registered in this worker"),
    )
}

/// The outcome for an attempt that outlived its timeout (retryable).
pub fn timed_out(timeout_ms: u64) -> Outcome {
    Outcome::failure(
        StepError::new(
            "timeout",
            format!("handler did not finish within {timeout_ms} ms"),
        ),
        true,
    )
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("handler panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("handler panicked: {s}")
    } else {
        "handler panicked".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(id: u64, handler: &str) -> Job {
        Job::new(
            id,
            StepMessage {
                handler: handler.into(),
                ..crate::test_support::test_message()
            },
        )
    }

    #[tokio::test]
    async fn draining_lets_the_running_job_finish_and_starts_no_other() {
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let released = std::sync::Mutex::new(Some(released));
        let mut registry = Registry::new();
        registry.register("wait", move |_ctx: StepContext| {
            let rx = released.lock().unwrap().take();
            async move {
                if let Some(rx) = rx {
                    let _ = rx.await;
                }
                Ok(json!("done"))
            }
        });
        let host = RustHost::new(registry, 1);
        let (sink, mut rx) = CompletionSink::channel();
        host.submit(vec![job(1, "wait"), job(2, "wait")], &sink);
        assert!(matches!(rx.recv().await, Some(Report::Started(1))));
        host.drain(&sink);
        host.submit(vec![job(3, "wait")], &sink);
        release.send(()).unwrap();
        let mut unstarted = Vec::new();
        let mut done = Vec::new();
        while unstarted.len() + done.len() < 3 {
            match rx.recv().await.unwrap() {
                Report::Started(job) => panic!("job {job} started while draining"),
                Report::Done(c) => done.push(c.job),
                Report::Unstarted(job) => unstarted.push(job),
                Report::Over(job) => panic!("job {job} reported over"),
            }
        }
        unstarted.sort_unstable();
        assert_eq!(done, vec![1]);
        assert_eq!(unstarted, vec![2, 3]);
    }
}
