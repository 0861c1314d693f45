//! A worker embedded in another language's process. The core (AMQP, acks, result publishing,
//! health) runs on a small tokio runtime of its own; the language's threads only take batches of
//! steps from the [`BatchHost`] and complete them. Bindings wrap this type and nothing more.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use uuid::Uuid;

use crate::batch_host::{BatchHost, JobView};
use crate::references::References;
use crate::setup::{Overrides, Setup};
use crate::worker::Worker;

/// What the language side passes when starting a worker. `None` keeps the configured value
/// (file, `TASKER_*` environment, defaults).
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOptions {
    /// Folder of the templates whose namespaces the worker consumes.
    pub templates: PathBuf,
    pub config_file: Option<PathBuf>,
    pub health_port: Option<u16>,
    pub concurrency: Option<usize>,
    /// The orchestrator the templates are registered with (`--orchestrator-url`).
    pub orchestrator_url: Option<String>,
    /// How long running handlers may finish on stop (`--shutdown-timeout`).
    pub shutdown_timeout: Option<Duration>,
    /// `ruby`, `python`, `typescript`: shown by `/health`.
    pub language: &'static str,
}

/// Why an embedded worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
    Telemetry(#[from] tasker_telemetry::Error),
}

/// A running embedded worker.
#[derive(Debug)]
pub struct EmbeddedWorker {
    running: Option<tokio::task::JoinHandle<()>>,
    runtime: Option<tokio::runtime::Runtime>,
    host: Arc<BatchHost>,
    parent_pages: ParentPages,
    cancel: CancellationToken,
    health: SocketAddr,
    namespaces: Vec<String>,
    concurrency: usize,
    shutdown_timeout: Duration,
    /// Tracing, when configured: its last spans flush once the worker stopped.
    telemetry: Option<tasker_telemetry::Telemetry>,
}

impl EmbeddedWorker {
    /// Loads configuration and templates, connects in the background and serves `/health`.
    pub fn start(options: EmbeddedOptions) -> Result<EmbeddedWorker, Error> {
        let setup = Setup::load(&Overrides {
            config_file: options.config_file.clone(),
            templates: Some(options.templates.clone()),
            health_port: options.health_port,
            concurrency: options.concurrency,
            orchestrator_url: options.orchestrator_url.clone(),
            shutdown_timeout_ms: options
                .shutdown_timeout
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        })?;
        let telemetry = crate::setup::telemetry(&setup.config, options.language)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tasker-worker-core")
            .enable_all()
            .build()?;
        let cancel = CancellationToken::new();
        runtime.block_on(crate::registration::register_templates(
            &setup,
            options.language,
            &cancel,
        ))?;
        let Setup {
            config,
            namespaces,
            options: worker_options,
            ..
        } = setup;
        let shutdown_timeout = worker_options.shutdown_timeout;
        let host = Arc::new(BatchHost::new());
        let worker = Worker::new(worker_options, host.clone());
        runtime
            .block_on(worker.check_access())
            .map_err(Error::Broker)?;
        let health = runtime.block_on(crate::health::serve(
            config.worker.health_bind,
            config.worker.health_port,
            worker.stats(),
            namespaces.clone(),
            options.language,
            cancel.clone(),
        ))?;
        let parent_pages = ParentPages {
            references: worker.references(),
            runtime: runtime.handle().clone(),
        };
        let token = cancel.clone();
        let running = runtime.spawn(async move { worker.run(token).await });
        Ok(EmbeddedWorker {
            running: Some(running),
            runtime: Some(runtime),
            host,
            parent_pages,
            cancel,
            health,
            namespaces,
            concurrency: config.worker.concurrency,
            shutdown_timeout,
            telemetry: Some(telemetry),
        })
    }

    /// Blocks up to `timeout` for steps; call it with the GIL/GVL released.
    pub fn next_batch(&self, max: usize, timeout: Duration) -> Vec<JobView> {
        self.host.next_batch(max, timeout)
    }

    /// The host, for bindings that wait asynchronously ([`BatchHost::next_batch_async`]).
    pub fn host(&self) -> Arc<BatchHost> {
        self.host.clone()
    }

    /// Reads the parent results of steps whose jobs say `"parent_results_by_reference": true`;
    /// cheap to clone and keep apart from the worker.
    pub fn parent_pages(&self) -> ParentPages {
        self.parent_pages.clone()
    }

    /// Reports outcomes as a JSON array (see [`crate::batch_host::OutcomeView`]).
    pub fn complete_json(&self, json: &str) -> Result<(), crate::batch_host::Error> {
        self.host.complete_json(json)
    }

    pub fn health_addr(&self) -> SocketAddr {
        self.health
    }

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

    /// Begins stopping, without blocking: no step is taken from the broker or handed out any
    /// more, and the shutdown timeout starts. The language side then lets the handlers it holds
    /// finish (within [`EmbeddedWorker::shutdown_timeout`]), reports them, and calls
    /// [`EmbeddedWorker::stop`].
    pub fn shutdown(&self) {
        self.cancel.cancel();
        self.host.stop();
    }

    /// Stops ([`EmbeddedWorker::shutdown`] first if it was not called): outcomes reported so
    /// far, and those of jobs handed out that are reported before the shutdown timeout, are
    /// published and their steps acknowledged; then the connection closes and every other step
    /// returns to its queue. Blocks until then.
    pub fn stop(&mut self) {
        self.shutdown();
        // Let the worker publish what was reported and close its broker connection before the
        // runtime goes away, so the AMQP I/O thread is not left with cancelled tasks.
        // (Not from inside another runtime, where blocking is not allowed.)
        let bound = self.shutdown_timeout + Duration::from_secs(10);
        if let (Some(rt), Some(running)) = (&self.runtime, self.running.take())
            && tokio::runtime::Handle::try_current().is_err()
        {
            let _ = rt.block_on(async { tokio::time::timeout(bound, running).await });
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
        drop(self.telemetry.take());
    }
}

/// Reads, for a binding, the parent results a job carries by reference (more than one page:
/// the convergence step of a large fan-out), a page at a time as the orchestrator wrote them.
/// The language side parses each page and offers its handlers all of them or one at a time.
#[derive(Debug, Clone)]
pub struct ParentPages {
    references: Arc<References>,
    runtime: tokio::runtime::Handle,
}

/// One page: a JSON object of step name to result, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentPage {
    pub results: String,
    pub next: Option<String>,
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0:?} is not a task, step or cursor id")]
    BadId(String),
    #[error("cannot read the step's parent results from the orchestrator: {0}")]
    Unavailable(#[from] tasker_client::Error),
    #[error("the worker is stopped")]
    Stopped,
}

impl ParentPages {
    /// The page of `step`'s parent results after the cursor `after` (the first page with
    /// `None`). Waits on the core's runtime; call it with the GIL/GVL released.
    pub fn page_blocking(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, PageError> {
        self.start(task, step, after)?
            .blocking_recv()
            .map_err(|_| PageError::Stopped)?
    }

    /// [`page_blocking`](Self::page_blocking) for a binding with a runtime of its own (Node).
    pub async fn page(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, PageError> {
        self.start(task, step, after)?
            .await
            .map_err(|_| PageError::Stopped)?
    }

    /// Reads the page on the core's runtime (whose HTTP client it is); the answer arrives on
    /// the receiver, which sees the sender dropped if the runtime stopped first.
    fn start(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<ParentPage, PageError>>, PageError> {
        let id = |s: &str| Uuid::parse_str(s).map_err(|_| PageError::BadId(s.to_owned()));
        let (task, step, after) = (id(task)?, id(step)?, after.map(id).transpose()?);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let references = self.references.clone();
        self.runtime.spawn(async move {
            let page = references
                .parent_results_text(task, step, after)
                .await
                .map(|p| ParentPage {
                    results: p.parent_results.get().to_owned(),
                    next: p.next.map(|n| n.to_string()),
                })
                .map_err(PageError::from);
            let _ = tx.send(page);
        });
        Ok(rx)
    }
}

impl Drop for EmbeddedWorker {
    fn drop(&mut self) {
        self.stop();
    }
}
