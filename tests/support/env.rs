//! One test's isolated world ([`TestEnv`]): a database and a queue prefix of its own, the
//! configuration pointing at them, and what starts orchestrators and workers there.

use tasker_orchestration::test_env::{World, with_database};

use super::*;

fn base_config() -> anyhow::Result<Config> {
    Config::load(None).context(
        "loading configuration; run the tests through `cargo make test` (or export the URLs \
         printed by `cargo-make/services.sh env`)",
    )
}

/// One test's isolated world: a database of its own and a queue prefix of its own (the
/// orchestrator's `test-env` world, [`tasker_orchestration::test_env::World`]).
#[derive(Debug)]
pub struct TestEnv {
    pub config: Config,
    world: World,
}

impl TestEnv {
    /// Creates a fresh database and prefix. Fails with a clear message if the services are
    /// not running.
    pub async fn new() -> anyhow::Result<TestEnv> {
        Self::on(base_config()?).await
    }

    /// [`TestEnv::new`] on the services `config` names (its `database_url` is the admin
    /// connection the test's database is created from).
    pub async fn on(config: Config) -> anyhow::Result<TestEnv> {
        // Tests build reqwest clients of their own (reqwest has no crypto provider of its own).
        tasker_client::install_crypto_provider();
        let world = World::create(config).await?;
        let mut config = world.config.clone();
        config.orchestrator.templates = vec![templates("rust")];
        // The world runs without tokens; the tests of tokens (tests/fast/auth.rs,
        // tests/slow/trust.rs) turn them on again.
        config.worker.health_port = 0;
        // Never another process's orchestrator (the demo's on 8080): a test whose worker talks
        // to its orchestrator sets this to it (as `Cluster::start` does); others reach nothing.
        config.worker.orchestrator_url = "http://127.0.0.1:9".into();
        Ok(TestEnv { config, world })
    }

    /// Starts an orchestrator on a free port.
    pub async fn orchestrator(&self) -> anyhow::Result<RunningOrchestrator> {
        RunningOrchestrator::start(self.config.clone()).await
    }

    /// Starts an in-process Rust worker for the fixture namespaces.
    pub fn rust_worker(&self) -> RunningWorker {
        self.rust_worker_for(&["rust_examples"])
    }

    /// Starts an in-process worker running the Rust fixture handlers for `namespaces`.
    pub fn rust_worker_for(&self, namespaces: &[&str]) -> RunningWorker {
        RunningWorker::start(self.rust_worker_unstarted(namespaces))
    }

    /// An in-process Rust worker of `rust_examples` reported in `client`'s workers registry
    /// (serving `handlers`) before it takes its first step, as a worker process is.
    pub async fn rust_worker_reported(
        &self,
        client: &Client,
        handlers: &[&str],
    ) -> anyhow::Result<RunningWorker> {
        let worker = self.rust_worker_unstarted(&["rust_examples"]);
        let (id, name) = (worker.options().id, &worker.options().name);
        client
            .report_worker(id, &crate::worker_report(name, handlers))
            .await?;
        Ok(RunningWorker::start(worker))
    }

    fn rust_worker_unstarted(&self, namespaces: &[&str]) -> Worker {
        let registry = tasker_worker_rust::registry();
        let w = &self.config.worker;
        let host = Arc::new(RustHost::new(registry, w.concurrency).with_priorities(
            Duration::from_millis(w.priority_aging_ms),
            w.low_priority_cap(),
        ));
        let namespaces = namespaces.iter().map(|n| (*n).to_owned()).collect();
        Worker::new(WorkerOptions::from_config(&self.config, namespaces), host)
    }

    /// A broker user of its own for a worker role, as `cargo-make/services.sh worker-users`
    /// makes them: it may read only `namespaces`' step queues of this test's prefix and write
    /// only its results exchange. Returns the user's name (unique on the broker; name this
    /// test's token for the role after it) and its AMQP URL.
    pub fn worker_user(&self, role: &str, namespaces: &[&str]) -> anyhow::Result<(String, String)> {
        let name = format!("{}-{role}", self.config.queue_prefix);
        let spec = format!("{name}={}", namespaces.join(","));
        self.broker_user("worker-users", &name, &spec)
    }

    /// The orchestrators' own broker user, as `cargo-make/services.sh orchestrator-user` makes
    /// it for the demo and cluster mode (not `guest`): it may declare, read and write this
    /// test's prefix's objects only. Returns its name and AMQP URL.
    pub fn orchestrator_user(&self) -> anyhow::Result<(String, String)> {
        let name = format!("{}-orchestrator", self.config.queue_prefix);
        self.broker_user("orchestrator-user", &name, &name)
    }

    /// Runs `services.sh COMMAND PREFIX ARG` and reads the URL of user `name` it prints.
    fn broker_user(
        &self,
        command: &str,
        name: &str,
        arg: &str,
    ) -> anyhow::Result<(String, String)> {
        let made = std::process::Command::new(repo_root().join("cargo-make/services.sh"))
            .arg(command)
            .arg(&self.config.queue_prefix)
            .arg(arg)
            .output()?;
        anyhow::ensure!(
            made.status.success(),
            "cargo-make/services.sh {command} failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let out = String::from_utf8(made.stdout)?;
        let url = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .with_context(|| format!("{command} printed no URL"))?
            .to_owned();
        Ok((name.to_owned(), url))
    }

    /// Deletes this test's queues (those of the four languages' fixture namespaces too, which
    /// a worker may declare without registering a template) and database.
    pub async fn cleanup(self) -> anyhow::Result<()> {
        let TestEnv { config, mut world } = self;
        // As the test left it (a TLS broker's CA, say).
        world.config = config;
        let examples: Vec<String> = ["rust", "ruby", "python", "typescript"]
            .iter()
            .map(|l| format!("{l}_examples"))
            .collect();
        world.remove(&examples).await
    }
}

/// The local streaming replica of `cargo-make/services.sh replica-start` (started if it is not
/// running), on the database `database_url` names.
pub fn local_replica_url(database_url: &str) -> anyhow::Result<String> {
    let out = std::process::Command::new(repo_root().join("cargo-make/services.sh"))
        .arg("replica-start")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "services.sh replica-start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let url = text
        .lines()
        .find_map(|l| l.strip_prefix("export TASKER_LOCAL_REPLICA_DATABASE_URL="))
        .context("services.sh replica-start printed no URL")?;
    let db = database_url.rsplit('/').next().unwrap_or_default();
    Ok(with_database(url.trim_matches('\''), db))
}

/// Stops and removes the local replica (`services.sh replica-stop`): a replica left running
/// replays every later test's or benchmark's WAL beside them.
pub fn stop_local_replica() -> anyhow::Result<()> {
    let status = std::process::Command::new(repo_root().join("cargo-make/services.sh"))
        .arg("replica-stop")
        .status()?;
    anyhow::ensure!(status.success(), "services.sh replica-stop: {status}");
    Ok(())
}
