//! `Tasker::BenchHost`: the hand-off of [`NativeWorker`](crate) without RabbitMQ, to measure
//! what the binding itself costs per handler call (`workers/ruby/bench_calls.rb`). Built only
//! with the `bench` feature (`workers/ruby/build.sh --bench`), so the shipped gem never has it.
//! It answers the same `take_steps` / `complete` as a worker; `submit` queues synthetic steps
//! the way the core does after a consume, and `wait_completed` waits for their outcomes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Map, json};
use tokio::sync::mpsc::UnboundedReceiver;
use uuid::Uuid;

use tasker_shared::StepMessage;
use tasker_worker::{BatchHost, CompletionSink, HandlerHost, Job, Report};

use crate::without_gvl;

#[magnus::wrap(class = "Tasker::BenchHost", free_immediately, size)]
pub(crate) struct BenchHost {
    host: Arc<BatchHost>,
    sink: CompletionSink,
    completions: Mutex<UnboundedReceiver<Report>>,
    next_id: Mutex<u64>,
    concurrency: usize,
}

impl BenchHost {
    pub(crate) fn new(concurrency: usize) -> Self {
        let (sink, completions) = CompletionSink::channel();
        Self {
            host: Arc::new(BatchHost::new()),
            sink,
            completions: Mutex::new(completions),
            next_id: Mutex::new(0),
            concurrency,
        }
    }

    /// Queues `n` steps for `handler`, each with context `{"value": i}`.
    pub(crate) fn submit(&self, n: u64, handler: String) {
        let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
        let jobs = (0..n)
            .map(|i| {
                Job::new(
                    *next + i,
                    StepMessage {
                        task_id: Uuid::now_v7(),
                        step_id: Uuid::now_v7(),
                        namespace: "bench".into(),
                        task_name: "bench".into(),
                        step_name: "call".into(),
                        handler: handler.clone(),
                        attempt: 1,
                        max_attempts: 1,
                        context: json!({ "value": i }),
                        parent_results: Map::new(),
                        context_by_reference: false,
                        parent_results_by_reference: false,
                        input: None,
                        dispatched_at: Utc::now(),
                        timeout_ms: 60_000,
                        queue_timeout_ms: None,
                        traceparent: None,
                        priority: None,
                        resent: false,
                    },
                )
            })
            .collect();
        *next += n;
        self.host.submit(jobs, &self.sink);
    }

    /// Waits (GVL released) until `n` outcomes have come back or `timeout_ms` passed; returns
    /// how many came back and how many of them were successes.
    pub(crate) fn wait_completed(&self, n: usize, timeout_ms: u64) -> (usize, usize) {
        let mut rx = self.completions.lock().unwrap_or_else(|p| p.into_inner());
        let wait = async {
            let (mut done, mut ok) = (0, 0);
            let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
            while done < n {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    // A job handed to Ruby: its clock starts; the outcome comes later.
                    Ok(Some(Report::Started(_))) => {}
                    Ok(Some(Report::Done(c))) => {
                        done += 1;
                        ok += usize::from(matches!(
                            c.outcome,
                            tasker_shared::Outcome::Success { .. }
                        ));
                    }
                    _ => break,
                }
            }
            (done, ok)
        };
        without_gvl(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map(|rt| rt.block_on(wait))
                .unwrap_or((0, 0))
        })
        .unwrap_or((0, 0))
    }

    pub(crate) fn take_steps(&self, max: usize, wait: f64) -> String {
        let host = self.host.clone();
        let wait = Duration::from_secs_f64(wait.max(0.0));
        let batch = without_gvl(move || host.next_batch(max, wait)).unwrap_or_default();
        serde_json::to_string(&batch).expect("a batch serializes to JSON")
    }

    pub(crate) fn complete(
        ruby: &magnus::Ruby,
        rb_self: &Self,
        json: String,
    ) -> Result<(), magnus::Error> {
        rb_self
            .host
            .complete_json(&json)
            .map_err(|e| magnus::Error::new(ruby.exception_arg_error(), e.to_string()))
    }

    pub(crate) fn stop(&self) {
        self.host.stop();
    }

    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    pub(crate) fn health_addr(&self) -> String {
        String::new()
    }

    pub(crate) fn namespaces(&self) -> Vec<String> {
        vec!["bench".into()]
    }
}

/// Defines `Tasker::BenchHost`.
pub(crate) fn define(ruby: &magnus::Ruby, tasker: magnus::RModule) -> Result<(), magnus::Error> {
    use magnus::{Module, Object, function, method};
    let bench = tasker.define_class("BenchHost", ruby.class_object())?;
    bench.define_singleton_method("new", function!(BenchHost::new, 1))?;
    bench.define_method("submit", method!(BenchHost::submit, 2))?;
    bench.define_method("wait_completed", method!(BenchHost::wait_completed, 2))?;
    bench.define_method("take_steps", method!(BenchHost::take_steps, 2))?;
    bench.define_method("complete", method!(BenchHost::complete, 1))?;
    bench.define_method("stop", method!(BenchHost::stop, 0))?;
    bench.define_method("concurrency", method!(BenchHost::concurrency, 0))?;
    bench.define_method("health_addr", method!(BenchHost::health_addr, 0))?;
    bench.define_method("namespaces", method!(BenchHost::namespaces, 0))?;
    Ok(())
}
