//! `tasker-node`: the Node.js binding of the Tasker worker core. It wraps
//! [`tasker_worker::EmbeddedWorker`] and nothing more: the core (AMQP, acks, result publishing,
//! timeouts, health) runs on its own threads; JavaScript takes batches of steps, told by the
//! `onReady` callback, with `takeBatch` (or waits for them with the Promise-returning
//! `nextBatch`), and reports outcomes with `completeBatch`. Jobs and outcomes cross as JSON
//! strings: one `JSON.parse` is cheaper than building objects field by field.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use tasker_worker::{BatchHost, EmbeddedOptions, EmbeddedWorker, PageError, ParentPages};

/// Options of [`NativeWorker::start`]; an absent value keeps the configured one (file,
/// `TASKER_*` environment, defaults).
#[napi(object)]
#[derive(Debug)]
pub struct StartOptions {
    /// Folder of task templates; the worker consumes their namespaces.
    pub templates: String,
    /// TOML configuration file.
    pub config_file: Option<String>,
    /// Port of `/health` (0 picks a free port); its address is `worker.health_bind`.
    pub health_port: Option<u32>,
    /// Steps the JavaScript side runs at once.
    pub concurrency: Option<u32>,
    /// The orchestrator the templates are registered with.
    pub orchestrator_url: Option<String>,
    /// How long running handlers may finish once stopping, in milliseconds.
    pub shutdown_timeout_ms: Option<u32>,
}

/// Waits up to `timeoutMs` for the worker core's log records and resolves with at most `max` of
/// them as a JSON array of `{level, target, message}` (`[]` when the wait ran out); the Worker
/// hands them to its logger.
#[napi]
pub async fn next_log_records(max: u32, timeout_ms: u32) -> Result<String> {
    let queue = tasker_worker::forward_logs("info");
    let records = queue
        .next_batch_async(max as usize, Duration::from_millis(u64::from(timeout_ms)))
        .await;
    serde_json::to_string(&records).map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
}

/// One page of a step's parent results.
#[napi(object)]
#[derive(Debug)]
pub struct ParentResultsPage {
    /// A JSON object of step name to result.
    pub results: String,
    /// The cursor of the next page; null after the last.
    pub next: Option<String>,
}

/// A running embedded worker core.
#[napi]
#[derive(Debug)]
pub struct NativeWorker {
    /// Taken by `stop`; the host stays reachable so a pending `nextBatch` can finish.
    inner: Mutex<Option<EmbeddedWorker>>,
    host: Arc<BatchHost>,
    parent_pages: ParentPages,
    health: String,
    namespaces: Vec<String>,
    concurrency: u32,
    shutdown_timeout_ms: u32,
}

#[napi]
impl NativeWorker {
    /// Loads configuration and templates, starts the core (it connects in the background) and
    /// serves `/health`. Throws with the reason if the configuration or templates are invalid.
    #[napi(factory)]
    pub fn start(options: StartOptions) -> Result<NativeWorker> {
        // The core's logs go to the Worker's logger (`console` by default), not to stderr.
        tasker_worker::forward_logs("info");
        let health_port = options
            .health_port
            .map(|p| {
                u16::try_from(p).map_err(|_| {
                    Error::new(Status::InvalidArg, format!("healthPort {p} is not a port"))
                })
            })
            .transpose()?;
        let worker = EmbeddedWorker::start(EmbeddedOptions {
            templates: PathBuf::from(&options.templates),
            config_file: options.config_file.map(PathBuf::from),
            health_port,
            concurrency: options.concurrency.map(|c| c as usize),
            orchestrator_url: options.orchestrator_url,
            shutdown_timeout: options
                .shutdown_timeout_ms
                .map(|ms| Duration::from_millis(u64::from(ms))),
            language: "typescript",
        })
        .map_err(|e| Error::new(Status::GenericFailure, e.to_string()))?;
        Ok(NativeWorker {
            host: worker.host(),
            parent_pages: worker.parent_pages(),
            health: worker.health_addr().to_string(),
            namespaces: worker.namespaces().to_vec(),
            concurrency: u32::try_from(worker.concurrency()).unwrap_or(u32::MAX),
            shutdown_timeout_ms: u32::try_from(worker.shutdown_timeout().as_millis())
                .unwrap_or(u32::MAX),
            inner: Mutex::new(Some(worker)),
        })
    }

    /// Waits up to `timeoutMs` for steps and resolves with a JSON array of at most `max` jobs
    /// (`[]` when the wait ran out or the worker stopped). The wait runs on napi's tokio
    /// runtime, so the event loop keeps running handlers meanwhile.
    #[napi]
    pub async fn next_batch(&self, max: u32, timeout_ms: u32) -> Result<String> {
        let jobs = self
            .host
            .next_batch_async(max as usize, Duration::from_millis(u64::from(timeout_ms)))
            .await;
        serde_json::to_string(&jobs).map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
    }

    /// Has `callback` called on the JavaScript thread each time steps are queued for this
    /// worker, and when it stops: the event loop then takes them with `takeBatch`. The core
    /// calls it straight from its own thread, where `nextBatch` resolves through a thread of
    /// napi's runtime first. The callback does not keep the process alive. Replaces an earlier
    /// callback.
    #[napi]
    pub fn on_ready(&self, callback: Function<(), ()>) -> Result<()> {
        let tsfn = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build()?;
        self.host.on_ready(move || {
            tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(())
    }

    /// A JSON array of at most `max` queued jobs, without waiting (`[]` when none is queued or
    /// the worker stopped).
    #[napi]
    pub fn take_batch(&self, max: u32) -> Result<String> {
        serde_json::to_string(&self.host.try_take(max as usize))
            .map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
    }

    /// Reports outcomes: a JSON array of `{id, status: "success", result}` or
    /// `{id, status: "failure", retryable, error: {kind, message, backtrace}}`.
    #[napi]
    pub fn complete_batch(&self, outcomes: String) -> Result<()> {
        self.host
            .complete_json(&outcomes)
            .map_err(|e| Error::new(Status::InvalidArg, e.to_string()))
    }

    /// One page of the parent results of a step whose job says `parent_results_by_reference`;
    /// start with `after` null. Rejects with code `GenericFailure` if the orchestrator cannot
    /// answer or the worker stopped, `InvalidArg` for an id that is not one.
    #[napi]
    pub async fn parent_results_page(
        &self,
        task_id: String,
        step_id: String,
        after: Option<String>,
    ) -> Result<ParentResultsPage> {
        let page = self
            .parent_pages
            .page(&task_id, &step_id, after.as_deref())
            .await
            .map_err(|e| {
                let status = match e {
                    PageError::BadId(_) => Status::InvalidArg,
                    PageError::Unavailable(_) | PageError::Stopped => Status::GenericFailure,
                };
                Error::new(status, e.to_string())
            })?;
        Ok(ParentResultsPage {
            results: page.results,
            next: page.next,
        })
    }

    /// `ip:port` of the `/health` endpoint.
    #[napi(getter)]
    pub fn health_addr(&self) -> String {
        self.health.clone()
    }

    /// Namespaces whose queues the worker consumes, sorted.
    #[napi(getter)]
    pub fn namespaces(&self) -> Vec<String> {
        self.namespaces.clone()
    }

    /// Steps to run at once (from options, configuration or the default).
    #[napi(getter)]
    pub fn concurrency(&self) -> u32 {
        self.concurrency
    }

    /// How long running handlers may finish once stopping, in milliseconds.
    #[napi(getter)]
    pub fn shutdown_timeout_ms(&self) -> u32 {
        self.shutdown_timeout_ms
    }

    /// Whether `shutdown` or `stop` was called.
    #[napi(getter)]
    pub fn stopped(&self) -> bool {
        self.host.is_stopped()
    }

    /// Begins stopping without blocking: no step is taken or handed out any more (a pending
    /// `nextBatch` resolves with `[]`) and the shutdown timeout starts. Report the running
    /// handlers' outcomes, then call `stop`. Idempotent.
    #[napi]
    pub fn shutdown(&self) {
        if let Some(worker) = self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            worker.shutdown();
        }
    }

    /// Stops: outcomes reported (and those reported before the shutdown timeout) are
    /// published and their steps acknowledged, then every other step goes back to its queue.
    /// Idempotent. Blocks until then.
    #[napi]
    pub fn stop(&self) {
        let worker = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut worker) = worker {
            worker.stop();
        }
    }
}
