//! Workflow tests on the real engine with a clock the test controls ([`WorkflowEnv`]): an
//! orchestrator in test mode (`tasker-orchestrator test-env`) on a database and queue prefix
//! of the test's own, on the PostgreSQL and RabbitMQ the configuration names (`DATABASE_URL`,
//! `AMQP_URL`; `cargo-make/services.sh` starts them), and the test's handlers in this process.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_client::{Client, Clock, Skipped, Task};

use crate::handler::Registry;
use crate::host::RustHost;
use crate::setup::{Broker, Overrides, Setup};
use crate::worker::Worker;

/// What `tasker-orchestrator test-env` prints once it serves.
#[derive(Debug, Clone, Deserialize)]
pub struct Place {
    /// The orchestrator's API.
    pub url: String,
    pub queue_prefix: String,
    pub amqp_url: String,
    /// The test's own database (dropped when the environment stops).
    pub database_url: String,
}

/// Why a workflow environment could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error(
        "cannot run {0}: {1}; build it (`cargo build -p tasker-orchestration`) and put it on \
         PATH or in TASKER_ORCHESTRATOR_BIN"
    )]
    Spawn(String, std::io::Error),
    #[error("tasker-orchestrator test-env ended before serving (its error is on stderr above)")]
    NoPlace,
    #[error(transparent)]
    Setup(#[from] crate::setup::Error),
    #[error(transparent)]
    Refused(#[from] crate::registration::Refused),
    #[error(transparent)]
    Api(#[from] tasker_client::Error),
}

/// A running test environment. Dropping it (or [`WorkflowEnv::stop`]) stops the worker and
/// the orchestrator, which deletes the test's database and queues.
#[derive(Debug)]
pub struct WorkflowEnv {
    place: Place,
    client: Client,
    orchestrator: Option<Child>,
    stop: CancellationToken,
    worker: Option<tokio::task::JoinHandle<()>>,
    /// Whether [`WorkflowEnv::wait`] skips the clock to the next timer whenever no step is
    /// with a worker (on by default).
    pub time_skipping: bool,
}

/// The orchestrator binary: `TASKER_ORCHESTRATOR_BIN`, else the one built next to this
/// program (a cargo test's `target/<profile>/`), else `tasker-orchestrator` on `PATH`.
pub fn orchestrator_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("TASKER_ORCHESTRATOR_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().ok();
    exe.iter()
        .flat_map(|e| e.ancestors().skip(1).take(2))
        .map(|dir| dir.join("tasker-orchestrator"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| "tasker-orchestrator".into())
}

impl WorkflowEnv {
    /// Starts an orchestrator in test mode, registers the templates of `templates` (and the
    /// schedules of its `schedules/` folder) and runs `registry`'s handlers for their steps
    /// in this process.
    pub async fn start(registry: Registry, templates: &Path) -> Result<WorkflowEnv, EnvError> {
        let bin = orchestrator_bin();
        let mut orchestrator = Command::new(&bin)
            .arg("test-env")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| EnvError::Spawn(bin.display().to_string(), e))?;
        let stdout = orchestrator.stdout.take().ok_or(EnvError::NoPlace)?;
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .map(|_| line)
        })
        .await
        .map_err(|_| EnvError::NoPlace)?
        .map_err(|_| EnvError::NoPlace)?;
        let place: Place = serde_json::from_str(&line).map_err(|_| EnvError::NoPlace)?;
        let client = Client::new(&place.url);
        let stop = CancellationToken::new();
        let mut env = WorkflowEnv {
            place,
            client,
            orchestrator: Some(orchestrator),
            stop,
            worker: None,
            time_skipping: true,
        };
        env.worker = Some(env.run_worker(registry, templates).await?);
        Ok(env)
    }

    async fn run_worker(
        &self,
        registry: Registry,
        templates: &Path,
    ) -> Result<tokio::task::JoinHandle<()>, EnvError> {
        let mut names: Vec<String> = registry.names().map(str::to_owned).collect();
        names.sort();
        let mut setup = Setup::load(&Overrides {
            templates: Some(templates.to_owned()),
            orchestrator_url: Some(self.place.url.clone()),
            health_port: Some(0),
            handlers: Some(names),
            broker: Some(Broker {
                amqp_url: self.place.amqp_url.clone(),
                queue_prefix: self.place.queue_prefix.clone(),
            }),
            register_templates: Some(true),
            ..Overrides::default()
        })?;
        setup.config.worker.api_token = None;
        crate::registration::register_templates(&setup, "rust", &self.stop).await?;
        let host = Arc::new(RustHost::new(registry, setup.config.worker.concurrency));
        let worker = Worker::new(setup.options.clone(), host);
        let stop = self.stop.clone();
        Ok(tokio::spawn(async move { worker.run(stop).await }))
    }

    /// The orchestrator's client (no token needed): create tasks, send signals, read steps.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Where the environment runs.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// The engine's time.
    pub async fn now(&self) -> Result<DateTime<Utc>, EnvError> {
        Ok(self.client.clock().await?.now)
    }

    /// Moves the engine's clock forward by `by` (`"7d"`, `"90s"`).
    pub async fn advance(&self, by: &str) -> Result<Clock, EnvError> {
        Ok(self.client.advance_clock(by).await?)
    }

    /// Moves the engine's clock to its next timer if no step is with a worker.
    pub async fn skip(&self) -> Result<Skipped, EnvError> {
        Ok(self.client.skip_clock().await?)
    }

    /// Waits up to `timeout` of wall time for a task to end, with time skipping when
    /// [`WorkflowEnv::time_skipping`] is on; the task as it is then.
    pub async fn wait(&self, task: Uuid, timeout: Duration) -> Result<Task, EnvError> {
        Ok(if self.time_skipping {
            self.client.wait_skipping(task, timeout).await?
        } else {
            self.client.wait(task, timeout).await?
        })
    }

    /// Stops the worker (running steps finish), then the orchestrator, which deletes the
    /// test's database and queues before it exits.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(worker) = self.worker.take() {
            let _ = worker.await;
        }
        if let Some(mut child) = self.orchestrator.take() {
            drop(child.stdin.take());
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
    }
}

impl Drop for WorkflowEnv {
    fn drop(&mut self) {
        self.stop.cancel();
        // Its stdin closing ends the orchestrator, which removes the test's world.
        if let Some(child) = &mut self.orchestrator {
            drop(child.stdin.take());
        }
    }
}
