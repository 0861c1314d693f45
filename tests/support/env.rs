//! One test's isolated world ([`TestEnv`]): a database and a queue prefix of its own, the
//! configuration pointing at them, and what starts orchestrators and workers there.

use super::*;

fn base_config() -> anyhow::Result<Config> {
    Config::load(None).context(
        "loading configuration; run the tests through `cargo make test` (or export the URLs \
         printed by `cargo-make/services.sh env`)",
    )
}

/// One test's isolated world: a database of its own and a queue prefix of its own.
#[derive(Debug)]
pub struct TestEnv {
    pub config: Config,
    admin_url: String,
    database: String,
}

impl TestEnv {
    /// Creates a fresh database and prefix. Fails with a clear message if the services are
    /// not running.
    pub async fn new() -> anyhow::Result<TestEnv> {
        Self::on(base_config()?).await
    }

    /// [`TestEnv::new`] on the services `config` names (its `database_url` is the admin
    /// connection the test's database is created from).
    pub async fn on(mut config: Config) -> anyhow::Result<TestEnv> {
        // Tests build reqwest clients of their own (reqwest has no crypto provider of its own).
        tasker_client::install_crypto_provider();
        let id = Uuid::now_v7().simple().to_string();
        let short = &id[id.len() - 12..];
        let database = format!("tasker_test_{short}");
        let admin_url = config.database_url.clone();
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .with_context(|| {
                format!(
                    "connecting to PostgreSQL at {admin_url}; start it with `cargo make services-start`"
                )
            })?;
        sqlx::query(&format!("CREATE DATABASE {database}"))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        config.database_url = replace_db(&admin_url, &database);
        config.queue_prefix = format!("test_{short}");
        config.orchestrator.templates = vec![templates("rust")];
        config.orchestrator.sweep_interval_ms = 200;
        // Tokens are required by default; the tests of tokens (tests/fast/auth.rs, tests/slow/trust.rs)
        // turn them on again.
        config.orchestrator.auth = tasker_shared::config::AuthMode::Off;
        config.orchestrator.db_max_connections = 8;
        config.worker.health_port = 0;
        // Never another process's orchestrator (the demo's on 8080): a test whose worker talks
        // to its orchestrator sets this to it (as `Cluster::start` does); others reach nothing.
        config.worker.orchestrator_url = "http://127.0.0.1:9".into();
        Ok(TestEnv {
            config,
            admin_url,
            database,
        })
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

    /// Deletes this test's queues and database.
    pub async fn cleanup(self) -> anyhow::Result<()> {
        let broker = tasker_broker::Broker::connect_with(
            &self.config.amqp_url,
            &self.config.queue_prefix,
            "test-cleanup",
            self.config.tls_ca_file.as_deref(),
        )
        .await?;
        let channel = broker.channel().await?;
        let p = &self.config.queue_prefix;
        let mut queues = vec![
            tasker_broker::topology::results_queue(p),
            tasker_broker::topology::dead_letter_queue(p),
        ];
        let mut namespaces: Vec<String> = ["rust", "ruby", "python", "typescript"]
            .iter()
            .map(|l| format!("{l}_examples"))
            .collect();
        // And every namespace the test registered (none if it never migrated the database).
        if let Ok(mut db) = sqlx::PgConnection::connect(&self.config.database_url).await {
            // Templates' namespaces and the namespaces their steps were routed to.
            let registered: Vec<(String,)> = sqlx::query_as(
                "SELECT namespace FROM task_templates
                 UNION SELECT namespace FROM steps WHERE namespace IS NOT NULL",
            )
            .fetch_all(&mut db)
            .await
            .unwrap_or_default();
            namespaces.extend(registered.into_iter().map(|(n,)| n));
            let _ = db.close().await;
        }
        for namespace in namespaces {
            queues.push(tasker_broker::topology::steps_queue(p, &namespace));
        }
        for q in queues {
            let _ = channel
                .queue_delete(q.as_str().into(), Default::default())
                .await;
        }
        broker.close().await;
        let mut admin = sqlx::PgConnection::connect(&self.admin_url).await?;
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.database
        ))
        .execute(&mut admin)
        .await?;
        Ok(())
    }
}

fn replace_db(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let base = match base.rfind('/') {
        Some(i) if i > "postgres://".len() => &base[..i],
        _ => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
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
    Ok(replace_db(url.trim_matches('\''), db))
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
