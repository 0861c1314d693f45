//! The one seam between the worker core and the language bindings (Ruby, Python, TypeScript),
//! as sdk-core keeps a `core-api`: a worker embedded in another language's process is an
//! [`EmbeddedWorker`], and the three binding crates wrap it method for method, adding nothing
//! but the conversion of errors to their language's exceptions and the release of the GIL/GVL.
//!
//! The core (AMQP, acks, result publishing, step timeouts, `/health`) runs on a small tokio
//! runtime of its own; the language's threads take steps and complete them. Every binding
//! offers the same vocabulary (snake_case in Python and Ruby, camelCase in TypeScript):
//!
//! | call | what it does |
//! |---|---|
//! | `start(options)` | loads configuration and templates, registers them, checks broker access, serves `/health`, starts consuming |
//! | `take_steps(max, wait)` | waits up to `wait` seconds for steps; a JSON array of at most `max` jobs |
//! | `take_ready_steps(max)` | the same without waiting (Node, told by `on_ready`) |
//! | `complete(outcomes)` | reports a JSON array of outcomes |
//! | `heartbeat(job)` | whether the job is still this worker's to finish |
//! | `parent_results_page(task, step, after)` | one page of parent results carried by reference |
//! | `shutdown()` / `stop()` | begin stopping without blocking / stop, publishing what was reported |
//!
//! Start options, jobs and outcomes cross as JSON text, described by
//! `tasker-worker/protocol.schema.json` (`definitions`: `start_options`, `job`, `outcome`), which the
//! conformance suite checks in every language. Durations are seconds wherever a binding passes
//! one; inside the JSON a field says its unit (`timeout_ms`, `retry_after_ms`).

mod pages;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::batch_host::{self, BatchHost};
use crate::setup::{Overrides, Setup};
use crate::worker::Worker;
pub use pages::ParentPage;
use pages::ParentPages;

/// The start options of the schema's `start_options`; an absent (or `null`) value keeps the
/// configured one (file, `TASKER_*` environment, defaults).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartOptions {
    /// Folder of the templates whose namespaces the worker consumes.
    pub templates: PathBuf,
    /// TOML configuration file.
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// Port of `/health` (0 picks a free one).
    #[serde(default)]
    pub health_port: Option<u16>,
    /// Steps the language side runs at once.
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// The orchestrator the templates are registered with (`--orchestrator-url`).
    #[serde(default)]
    pub orchestrator_url: Option<String>,
    /// Seconds running handlers may take to finish once stopping (`--shutdown-timeout`).
    #[serde(default)]
    pub shutdown_timeout: Option<f64>,
    /// The handlers the language side registered: the core consumes only the namespaces of
    /// the steps they run (every step's of its templates when absent).
    #[serde(default)]
    pub handlers: Option<Vec<String>>,
    /// The broker, instead of the configured one (a test environment's, docs/testing.md).
    #[serde(default)]
    pub amqp_url: Option<String>,
    /// The queue prefix with `amqp_url` (`tasker` when absent).
    #[serde(default)]
    pub queue_prefix: Option<String>,
    /// Whether to register the templates (`worker.register_templates`).
    #[serde(default)]
    pub register_templates: Option<bool>,
}

impl StartOptions {
    /// Reads and checks start options given as JSON text.
    pub fn from_json(json: &str) -> Result<StartOptions, Error> {
        let options: StartOptions = serde_json::from_str(json)
            .map_err(|e| Error::InvalidArgument(format!("invalid start options: {e}")))?;
        if let Some(s) = options.shutdown_timeout {
            seconds(s, "shutdown_timeout")?;
        }
        if options.concurrency == Some(0) {
            return Err(Error::InvalidArgument(
                "concurrency must be at least 1".into(),
            ));
        }
        Ok(options)
    }
}

/// Why the core could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Setup(#[from] crate::setup::Error),
    #[error(transparent)]
    Refused(#[from] crate::registration::Refused),
    /// The broker refused this worker's user one of its namespaces' step queues.
    #[error(
        "{0}; give this worker's broker user read access to it, or remove the templates of that namespace"
    )]
    Broker(tasker_broker::Error),
    #[error("starting the worker runtime: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Health(#[from] crate::health::BindError),
    #[error(transparent)]
    Telemetry(#[from] tasker_telemetry::Error),
}

/// What a call of the vocabulary can fail with; each binding maps the four to its language's
/// exceptions the same way (`WorkerError`, `ArgumentError`/`ValueError`/`InvalidArg`,
/// `ReferenceUnavailable`, `WorkerError`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The worker could not start (templates, configuration, port, broker, registration).
    #[error(transparent)]
    Start(#[from] StartError),
    /// Options, outcomes or ids that do not follow the schema.
    #[error("{0}")]
    InvalidArgument(String),
    /// The orchestrator could not be asked for a page of parent results (retried like any
    /// error).
    #[error("cannot read the step's parent results from the orchestrator: {0}")]
    Unavailable(#[source] tasker_client::Error),
    /// The worker stopped before the call.
    #[error("the worker is stopped")]
    Stopped,
}

/// A duration a binding passes, in seconds: finite and at least 0.
pub fn seconds(value: f64, name: &str) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        Error::InvalidArgument(format!(
            "{name} must be a number of seconds, at least 0, not {value}"
        ))
    })
}

/// The running core, taken by [`EmbeddedWorker::stop`].
#[derive(Debug)]
struct Running {
    task: Option<tokio::task::JoinHandle<()>>,
    runtime: tokio::runtime::Runtime,
    /// Tracing, when configured: its last spans flush once the worker stopped.
    telemetry: tasker_telemetry::Telemetry,
}

/// A running embedded worker: the binding-facing type. Every method takes `&self`, so a
/// binding shares one value between the threads that take steps and the one that stops it.
#[derive(Debug)]
pub struct EmbeddedWorker {
    host: Arc<BatchHost>,
    pages: ParentPages,
    cancel: CancellationToken,
    health: SocketAddr,
    namespaces: Vec<String>,
    concurrency: usize,
    shutdown_timeout: Duration,
    running: Mutex<Option<Running>>,
}

impl EmbeddedWorker {
    /// `start(options)`: `options` is the schema's `start_options` as JSON text; `language`
    /// (`ruby`, `python`, `typescript`) is shown by `/health` and in template registrations.
    /// Sends the core's logs to the log queue the binding drains ([`next_log_records`]).
    pub fn start(language: &'static str, options: &str) -> Result<EmbeddedWorker, Error> {
        crate::log_forward::forward("info");
        let options = StartOptions::from_json(options)?;
        Ok(Self::launch(language, &options)?)
    }

    /// Starts from options [`StartOptions::from_json`] has checked.
    fn launch(
        language: &'static str,
        options: &StartOptions,
    ) -> Result<EmbeddedWorker, StartError> {
        // Checked finite and at least 0 by from_json.
        let shutdown_timeout = options.shutdown_timeout.map(Duration::from_secs_f64);
        let setup = Setup::load(&Overrides {
            config_file: options.config.clone(),
            templates: Some(options.templates.clone()),
            health_port: options.health_port,
            concurrency: options.concurrency,
            orchestrator_url: options.orchestrator_url.clone(),
            shutdown_timeout_ms: shutdown_timeout
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            handlers: options.handlers.clone(),
            register_templates: options.register_templates,
            broker: options
                .amqp_url
                .clone()
                .map(|amqp_url| crate::setup::Broker {
                    amqp_url,
                    queue_prefix: options
                        .queue_prefix
                        .clone()
                        .unwrap_or_else(|| "tasker".into()),
                }),
        })?;
        let telemetry = crate::setup::telemetry(&setup.config, language)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tasker-worker-core")
            .enable_all()
            .build()?;
        let cancel = CancellationToken::new();
        runtime.block_on(crate::registration::register_templates(
            &setup, language, &cancel,
        ))?;
        {
            // Ends with the runtime if the start fails below.
            let _entered = runtime.enter();
            crate::presence::spawn(&setup, language, setup.config.worker.concurrency, &cancel);
        }
        let health_port = setup.health_port();
        let Setup {
            config,
            namespaces,
            options: worker_options,
            ..
        } = setup;
        let shutdown_timeout = worker_options.shutdown_timeout;
        let host = Arc::new(BatchHost::new().with_priorities(
            Duration::from_millis(config.worker.priority_aging_ms),
            config.worker.low_priority_cap(),
        ));
        let worker = Worker::new(worker_options, host.clone());
        runtime
            .block_on(worker.check_access())
            .map_err(StartError::Broker)?;

        let health = runtime.block_on(crate::health::serve(
            health_port,
            worker.stats(),
            namespaces.clone(),
            language,
            cancel.clone(),
        ))?;
        let pages = ParentPages {
            references: worker.references(),
            runtime: runtime.handle().clone(),
        };
        let token = cancel.clone();
        let task = runtime.spawn(async move { worker.run(token).await });
        Ok(EmbeddedWorker {
            host,
            pages,
            cancel,
            health,
            namespaces,
            concurrency: config.worker.concurrency,
            shutdown_timeout,
            running: Mutex::new(Some(Running {
                task: Some(task),
                runtime,
                telemetry,
            })),
        })
    }

    fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `take_steps(max, wait)`: waits up to `wait` for steps and returns at most `max` of them
    /// as a JSON array of jobs (`[]` when the wait ran out or the worker is stopping). Call it
    /// with the GIL/GVL released; [`EmbeddedWorker::stop`] wakes it at once.
    pub fn take_steps(&self, max: usize, wait: Duration) -> String {
        jobs_json(&self.host.next_batch(max, wait))
    }

    /// [`take_steps`](Self::take_steps) for a binding with a runtime of its own (Node).
    pub async fn take_steps_async(&self, max: usize, wait: Duration) -> String {
        jobs_json(&self.host.next_batch_async(max, wait).await)
    }

    /// `take_ready_steps(max)`: at most `max` queued jobs, without waiting.
    pub fn take_ready_steps(&self, max: usize) -> String {
        jobs_json(&self.host.try_take(max))
    }

    /// Has `hook` called on the core's thread each time steps are queued and when the worker
    /// stops, so an event loop that must not block takes them with
    /// [`take_ready_steps`](Self::take_ready_steps). See [`BatchHost::on_ready`].
    pub fn on_ready(&self, hook: impl Fn() + Send + Sync + 'static) {
        self.host.on_ready(hook);
    }

    /// `complete(outcomes)`: a JSON array of the schema's `outcome`s. Outcomes of jobs the core
    /// no longer holds (timed out, or unknown) are ignored.
    pub fn complete(&self, outcomes: &str) -> Result<(), Error> {
        self.host.complete_json(outcomes).map_err(|e| match e {
            batch_host::Error::InvalidOutcome(_) => Error::InvalidArgument(e.to_string()),
            batch_host::Error::Stopped => Error::Stopped,
        })
    }

    /// `emit(job, topic, payload, text)`: a chunk of the job's stream (`ctx.emit`: JSON text;
    /// `ctx.emit_text`: the text itself). Never blocks. The error's [`kind`](crate::StreamError::kind)
    /// is the step error a handler that lets it propagate fails with.
    pub fn emit(
        &self,
        job: u64,
        topic: &str,
        payload: &str,
        text: bool,
    ) -> Result<(), crate::StreamError> {
        self.host.emit(job, topic, payload, text)
    }

    /// `heartbeat(job)`: whether the job is still this worker's to finish — handed out, not
    /// reported, within its step's timeout, and the worker not stopped. A long handler checks
    /// it between units of work and gives up once it is `false` (its outcome would be
    /// ignored). It does not extend the step's timeout.
    pub fn heartbeat(&self, job: u64) -> bool {
        self.running().is_some() && self.host.holds(job)
    }

    /// `parent_results_page(task, step, after)`: the page of `step`'s parent results after the
    /// cursor `after` (the first page with `None`), for a job that says
    /// `"parent_results_by_reference": true`. Call it with the GIL/GVL released.
    pub fn parent_results_page(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, Error> {
        self.pages.blocking(task, step, after)
    }

    /// [`parent_results_page`](Self::parent_results_page) for a binding with a runtime of its
    /// own (Node).
    pub async fn parent_results_page_async(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, Error> {
        self.pages.awaited(task, step, after).await
    }

    /// `ip:port` of `/health`.
    pub fn health_addr(&self) -> SocketAddr {
        self.health
    }

    /// The namespaces consumed, sorted.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Steps the language side should run at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// How long running handlers may finish once the worker is told to stop
    /// (`worker.shutdown_timeout_ms`, `--shutdown-timeout`): the language side waits this long
    /// for its handlers before [`EmbeddedWorker::stop`].
    pub fn shutdown_timeout(&self) -> Duration {
        self.shutdown_timeout
    }

    /// True once `shutdown` or `stop` ran: `take_steps` then returns at once with no jobs.
    pub fn is_stopped(&self) -> bool {
        self.host.is_stopped()
    }

    /// `shutdown()`: begins stopping, without blocking: no step is taken from the broker or
    /// handed out any more, and the shutdown timeout starts. The language side then lets the
    /// handlers it holds finish (within [`EmbeddedWorker::shutdown_timeout`]), reports them,
    /// and calls [`EmbeddedWorker::stop`]. Idempotent.
    pub fn shutdown(&self) {
        self.cancel.cancel();
        self.host.stop();
    }

    /// `stop()` ([`EmbeddedWorker::shutdown`] first if it was not called): outcomes reported so
    /// far, and those of jobs handed out that are reported before the shutdown timeout, are
    /// published and their steps acknowledged; then the connection closes and every other step
    /// returns to its queue. Blocks until then (call it with the GIL/GVL released).
    /// Idempotent.
    pub fn stop(&self) {
        self.shutdown();
        let Some(mut running) = self.running().take() else {
            return;
        };
        // Let the worker publish what was reported and close its broker connection before the
        // runtime goes away, so the AMQP I/O thread is not left with cancelled tasks.
        // (Not from inside another runtime, where blocking is not allowed.)
        let bound = self.shutdown_timeout + Duration::from_secs(10);
        if let Some(task) = running.task.take()
            && tokio::runtime::Handle::try_current().is_err()
        {
            let _ = running
                .runtime
                .block_on(async { tokio::time::timeout(bound, task).await });
        }
        running.runtime.shutdown_timeout(Duration::from_secs(5));
        drop(running.telemetry);
    }
}

impl Drop for EmbeddedWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `next_log_records(max, wait)`: waits up to `wait` for the core's log records and returns at
/// most `max` as a JSON array of `{"level", "target", "message"}` (`[]` when the wait ran
/// out). Call it with the GIL/GVL released, from a thread that hands them to the language's
/// logger.
pub fn next_log_records(max: usize, wait: Duration) -> String {
    let records = crate::log_forward::forward("info").next_batch(max, wait);
    serde_json::to_string(&records).expect("log records serialize to JSON")
}

/// [`next_log_records`] for a binding with a runtime of its own (Node).
pub async fn next_log_records_async(max: usize, wait: Duration) -> String {
    let records = crate::log_forward::forward("info")
        .next_batch_async(max, wait)
        .await;
    serde_json::to_string(&records).expect("log records serialize to JSON")
}

/// Jobs as JSON: they hold only strings, numbers, UUIDs and JSON values, so this cannot fail.
fn jobs_json(jobs: &[batch_host::JobView]) -> String {
    serde_json::to_string(jobs).expect("jobs serialize to JSON")
}
