//! Test support for Tasker's end-to-end tests and benchmarks: real PostgreSQL and RabbitMQ
//! (started by `cargo-make/services.sh`), isolated per test by a fresh database and a queue
//! prefix of its own; orchestrators and workers started in-process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use sqlx::Connection;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_client::{Client, ClientOptions, CreateTask, Task};
use tasker_orchestration::events::{Event, Events};
use tasker_orchestration::{Orchestrator, Shared};
use tasker_shared::{Config, TaskState};
use tasker_worker::{RustHost, Stats, Worker, WorkerOptions};

/// Repository root (for fixtures).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target folder: `CARGO_TARGET_DIR`, else the repository's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// Prints a benchmark's notes and writes its figures (`fields`, a JSON object, plus the notes,
/// the time and commit of the run and any `TASKER_BENCH_FILTER`) to `<target>/<bench>/summary.json`,
/// where `cargo make bench-report` reads them (and leaves the published report alone when the
/// run was filtered: part of a run must not replace a whole one).
pub fn write_bench_summary(bench: &str, fields: Value, notes: &[String]) -> anyhow::Result<()> {
    for n in notes {
        println!("note: {n}");
    }
    let mut summary = match fields {
        Value::Object(m) => m,
        other => anyhow::bail!("a benchmark summary is a JSON object, not {other}"),
    };
    summary.insert("notes".into(), serde_json::json!(notes));
    summary.insert(
        "recorded_at".into(),
        Value::String(chrono::Utc::now().to_rfc3339()),
    );
    // The commit measured, read now: the report may be written after more commits.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(repo_root())
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    if let Some(commit) = git(&["rev-parse", "--short", "HEAD"]) {
        summary.insert("commit".into(), Value::String(commit));
    }
    if let Some(changes) = git(&["status", "--porcelain", "--untracked-files=no"]) {
        summary.insert("dirty".into(), Value::Bool(!changes.is_empty()));
    }
    if let Some(filter) = std::env::var("TASKER_BENCH_FILTER")
        .ok()
        .filter(|f| !f.is_empty())
    {
        summary.insert("filter".into(), Value::String(filter));
    }
    let dir = target_dir().join(bench);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_vec_pretty(&summary)?,
    )?;
    Ok(())
}

/// Folder of the fixture templates of one language.
pub fn templates(language: &str) -> PathBuf {
    repo_root()
        .join("tests/fixtures/task_templates")
        .join(language)
}

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
        let registry = tasker_worker_rust::registry();
        let w = &self.config.worker;
        let host = Arc::new(RustHost::new(registry, w.concurrency).with_priorities(
            Duration::from_millis(w.priority_aging_ms),
            w.low_priority_cap(),
        ));
        let namespaces = namespaces.iter().map(|n| (*n).to_owned()).collect();
        RunningWorker::start(Worker::new(
            WorkerOptions::from_config(&self.config, namespaces),
            host,
        ))
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

/// An orchestrator running in this process.
#[derive(Debug)]
pub struct RunningOrchestrator {
    pub addr: SocketAddr,
    /// `http://` or, with `orchestrator.tls_cert_file`, `https://` and the address.
    base_url: String,
    pub client: Client,
    pub shared: Shared,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

impl RunningOrchestrator {
    pub async fn start(config: Config) -> anyhow::Result<RunningOrchestrator> {
        Self::start_on(config, "127.0.0.1:0").await
    }

    /// Starts one whose API listens on `addr`.
    pub async fn start_on(config: Config, addr: &str) -> anyhow::Result<RunningOrchestrator> {
        // With the workers' token, if they have one (an orchestrator that requires tokens), and
        // the CA they trust.
        let options = ClientOptions {
            token: config.worker.api_token.clone(),
            tls_ca_file: config.tls_ca_file.clone(),
        };
        let orchestrator = Orchestrator::start(config).await?;
        let scheme = if orchestrator.serves_tls() {
            "https"
        } else {
            "http"
        };
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = orchestrator.shared().clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            if let Err(e) = orchestrator.run(listener, token).await {
                eprintln!("orchestrator stopped with an error: {e}");
            }
        });
        let base_url = format!("{scheme}://{addr}");
        let client = Client::with_options(&base_url, &options)?;
        let mut up = shared.broker_watch();
        tokio::time::timeout(Duration::from_secs(20), up.wait_for(|up| *up))
            .await
            .context("orchestrator not connected to the broker after 20 s")??;
        // And listening for notifications, so a test's next registration or completion on
        // another orchestrator reaches this one.
        let mut listening = shared.events.listening();
        tokio::time::timeout(Duration::from_secs(20), listening.wait_for(|up| *up))
            .await
            .context("orchestrator not listening for notifications after 20 s")??;
        Ok(RunningOrchestrator {
            addr,
            base_url,
            client,
            shared,
            cancel,
            handle,
        })
    }

    pub fn events(&self) -> &Events {
        &self.shared.events
    }

    /// Waits until `check` gives a value, looking again at every event of this orchestrator (a
    /// sweep comes every `sweep_interval_ms`, 200 ms in tests), for at most `timeout`.
    pub async fn until<T, F, Fut>(
        &self,
        timeout: Duration,
        what: &str,
        check: F,
    ) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        let mut events = self.events().subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(v) = check().await? {
                return Ok(v);
            }
            if tokio::time::timeout_at(deadline, events.recv())
                .await
                .is_err()
            {
                anyhow::bail!("{what}: not within {timeout:?}");
            }
        }
    }

    /// Task completions announced on this orchestrator from now on (its own, and other
    /// orchestrators' relayed through PostgreSQL `NOTIFY`).
    pub fn completions(&self) -> Completions {
        Completions(self.shared.events.subscribe())
    }

    pub fn url(&self) -> String {
        self.base_url.clone()
    }

    /// Creates a task and waits (through the completion notification) for it to finish.
    pub async fn run_task(
        &self,
        namespace: &str,
        name: &str,
        context: Value,
    ) -> anyhow::Result<Task> {
        let task = self
            .client
            .create_task(&CreateTask::new(namespace, name).context(context))
            .await?;
        self.wait(task.id).await
    }

    /// Waits for a task to become terminal (at most 30 s).
    pub async fn wait(&self, id: Uuid) -> anyhow::Result<Task> {
        let task = self.client.task(id, Some(Duration::from_secs(30))).await?;
        anyhow::ensure!(task.is_terminal(), "task {id} still running after 30 s");
        Ok(task)
    }

    /// Dead letters this orchestrator keeps from now on.
    pub fn dead_letters_kept(&self) -> KeptDeadLetters {
        KeptDeadLetters(self.shared.events.subscribe())
    }

    /// Stops it as a SIGKILL would, without a graceful shutdown: its work is dropped where it
    /// stands (open transactions roll back as their connections close).
    pub async fn kill(self) {
        self.handle.abort();
        let _ = self.handle.await;
    }

    /// Stops it and waits until it has.
    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// Dead letters as the orchestrator keeps them, announced by [`Event::DeadLetterKept`].
#[derive(Debug)]
pub struct KeptDeadLetters(tokio::sync::broadcast::Receiver<Event>);

impl KeptDeadLetters {
    /// Waits (at most `timeout`) for `n` dead letters to be kept; their ids, in order.
    pub async fn take(&mut self, n: usize, timeout: Duration) -> anyhow::Result<Vec<i64>> {
        let mut ids = Vec::with_capacity(n);
        let wait = async {
            while ids.len() < n {
                if let Event::DeadLetterKept { id } = self.0.recv().await? {
                    ids.push(id);
                }
            }
            anyhow::Ok(())
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(done) => done.map(|()| ids),
            Err(_) => anyhow::bail!("{} of {n} dead letters kept within {timeout:?}", ids.len()),
        }
    }
}

/// Task completions, as the API's waiters see them: driven by the completion notification.
#[derive(Debug)]
pub struct Completions(tokio::sync::broadcast::Receiver<Event>);

impl Completions {
    /// Waits (at most `timeout`) for task `id` to finish and returns its final state.
    pub async fn wait_for(&mut self, id: Uuid, timeout: Duration) -> anyhow::Result<TaskState> {
        let wait = async {
            loop {
                if let Event::TaskFinished { task_id, state } = self.0.recv().await?
                    && task_id == id
                {
                    return anyhow::Ok(state);
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| anyhow::anyhow!("task {id} did not finish within {timeout:?}"))?
    }
}

/// A worker running in this process.
#[derive(Debug)]
pub struct RunningWorker {
    pub stats: Arc<Stats>,
    /// Its id and name in the workers registry (an in-process worker does not report itself:
    /// [`RunningWorker::register`]).
    pub id: Uuid,
    pub name: String,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

impl RunningWorker {
    pub fn start(worker: Worker) -> RunningWorker {
        let cancel = CancellationToken::new();
        let stats = worker.stats();
        let (id, name) = (worker.options().id, worker.options().name.clone());
        let token = cancel.clone();
        let handle = tokio::spawn(async move { worker.run(token).await });
        RunningWorker {
            stats,
            id,
            name,
            cancel,
            handle,
        }
    }

    /// Reports it in the workers registry, serving `handlers` of `rust_examples`, as a worker
    /// process does at start (what its running reports need).
    pub async fn register(&self, client: &Client, handlers: &[&str]) -> anyhow::Result<()> {
        client
            .report_worker(self.id, &worker_report(&self.name, handlers))
            .await?;
        Ok(())
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// The `(index, code)` of each result an engine answer (`tasker_apply_results`,
/// `tasker_judge_results`) rejected, in its order.
pub fn rejected_codes(answer: &Value) -> Vec<(i64, &str)> {
    answer["rejected"]
        .as_array()
        .map(|rejected| {
            rejected
                .iter()
                .map(|r| {
                    (
                        r["i"].as_i64().unwrap_or(-1),
                        r["code"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The path of a binary built from this workspace (`cargo build --workspace --bins` first).
pub fn workspace_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/deps/<test binary>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("unexpected test binary location")?;
    let path = dir.join(name);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (cargo make test does)",
        path.display()
    );
    Ok(path)
}

/// A task whose `nap` step sleeps `sleep_ms` on a Rust worker that reports the steps it runs
/// to `o` (as a worker process does): `family_grandchild` of the composition fixtures, which
/// `o` must know. The worker serves `double` and `sleep`.
pub async fn napping(
    env: &mut TestEnv,
    o: &RunningOrchestrator,
    sleep_ms: u64,
) -> anyhow::Result<(RunningWorker, Task)> {
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    worker.register(&o.client, &["double", "sleep"]).await?;
    let task = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "family_grandchild")
                .context(serde_json::json!({"value": 2, "sleep_ms": sleep_ms})),
        )
        .await?;
    Ok((worker, task))
}

/// A test's orchestrator and Rust worker on an isolated environment.
#[derive(Debug)]
pub struct Cluster {
    pub env: TestEnv,
    pub orchestrator: RunningOrchestrator,
    pub worker: RunningWorker,
}

impl Cluster {
    pub async fn start() -> anyhow::Result<Cluster> {
        let mut env = TestEnv::new().await?;
        let orchestrator = env.orchestrator().await?;
        // What steps carry by reference, the worker fetches from this orchestrator.
        env.config.worker.orchestrator_url = orchestrator.url();
        let worker = env.rust_worker();
        Ok(Cluster {
            env,
            orchestrator,
            worker,
        })
    }

    /// Stops everything and deletes the test's database and queues.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.worker.stop().await;
        self.orchestrator.stop().await;
        self.env.cleanup().await
    }
}

/// A task's steps by name.
pub async fn steps_by_name(
    client: &Client,
    id: Uuid,
) -> anyhow::Result<std::collections::BTreeMap<String, tasker_client::Step>> {
    Ok(client
        .steps(id)
        .await?
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect())
}

/// Steps without their task, and edges that do not join two steps of their own task (their
/// foreign keys are gone since migration 0018: the SQL functions that write and purge them keep
/// the rule, and this checks it).
pub async fn stray_steps_and_edges<'e>(db: impl sqlx::PgExecutor<'e>) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM steps s
                 WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = s.task_id))
              + (SELECT count(*) FROM step_edges e
                 WHERE NOT EXISTS (SELECT 1 FROM steps p
                                   WHERE p.id = e.parent_id AND p.task_id = e.task_id)
                    OR NOT EXISTS (SELECT 1 FROM steps c
                                   WHERE c.id = e.child_id AND c.task_id = e.task_id))",
    )
    .fetch_one(db)
    .await?)
}

/// POSTs `body` as JSON; the status and the JSON answer.
pub async fn post_json(
    url: &str,
    body: impl Into<reqwest::Body>,
) -> anyhow::Result<(reqwest::StatusCode, Value)> {
    let resp = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    let status = resp.status();
    Ok((status, resp.json().await?))
}

/// Reads a child process's output (`lines`) until a line containing `needle`, for at most
/// `within`, and returns that line; `what` names the process in the error.
pub async fn line_containing<R>(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<R>>,
    needle: &str,
    within: Duration,
    what: &str,
) -> anyhow::Result<String>
where
    R: tokio::io::AsyncRead + Unpin,
{
    tokio::time::timeout(within, async {
        while let Some(line) = lines.next_line().await? {
            if line.contains(needle) {
                return anyhow::Ok(line);
            }
        }
        anyhow::bail!("{what} exited before printing {needle:?}")
    })
    .await
    .with_context(|| format!("{what} did not print {needle:?} within {within:?}"))?
}

/// Starts a worker command (its stderr shown, its stdout read), waits up to 90 s for its ready
/// line, then keeps draining its stdout so it never blocks on a full pipe.
pub async fn start_until_ready(
    cmd: &mut tokio::process::Command,
    what: &str,
) -> anyhow::Result<tokio::process::Child> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    line_containing(
        &mut lines,
        "tasker worker ready",
        Duration::from_secs(90),
        what,
    )
    .await?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(child)
}

/// A Rust worker's report to the workers registry, as a worker core sends it: `name`, serving
/// `handlers` in `rust_examples`, reporting every minute.
pub fn worker_report(name: &str, handlers: &[&str]) -> tasker_shared::api::WorkerReport {
    tasker_shared::api::WorkerReport {
        name: name.to_owned(),
        language: "rust".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        host: "localhost".into(),
        pid: i64::from(std::process::id()),
        namespaces: vec!["rust_examples".into()],
        handlers: handlers.iter().map(|h| (*h).to_owned()).collect(),
        concurrency: 8,
        heartbeat_ms: 60_000,
        started_at: chrono::Utc::now(),
    }
}

pub mod letters;
pub mod proxy;
pub mod scrape;
pub mod tokens;

/// The polyglot pipeline's oracle (`tests/fixtures/task_templates/polyglot/pipeline.yaml`,
/// `benches/pipeline_oracle.py`): the same events and aggregates computed in one process.
pub mod pipeline {
    use std::collections::BTreeMap;

    use serde_json::Value;

    /// Aggregates: (user, type_code) → (count, amount_sum), views (type 1) left out.
    pub type Rows = BTreeMap<(u64, u64), (u64, u64)>;

    fn mix(mut x: u32) -> u32 {
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    }

    /// Event `i`: (user, type_code, amount).
    pub fn event(seed: u32, users: u32, i: u32) -> (u64, u64, u64) {
        let h1 = mix(seed ^ mix(i));
        let h2 = mix(h1 ^ 0x9e37_79b9);
        let h3 = mix(h2);
        (
            u64::from(h1 % users),
            u64::from(h2 % 3),
            u64::from(h3 % 10_000),
        )
    }

    /// The aggregates of events `[first, first + count)`.
    pub fn oracle(seed: u32, users: u32, first: u32, count: u32) -> Rows {
        let mut rows = Rows::new();
        for i in first..first + count {
            let (user, kind, amount) = event(seed, users, i);
            if kind == 1 {
                continue;
            }
            let row = rows.entry((user, kind)).or_default();
            row.0 += 1;
            row.1 += amount;
        }
        rows
    }

    /// Adds a sink result's `rows` (`[[user, type_code, count, amount_sum], …]`) to `into`;
    /// the number of rows read.
    pub fn merge(sink: &Value, into: &mut Rows) -> anyhow::Result<usize> {
        let rows = sink["rows"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("a sink result without rows: {sink}"))?;
        for r in rows {
            let n = |i: usize| {
                r[i].as_u64()
                    .ok_or_else(|| anyhow::anyhow!("a row that is not four integers: {r}"))
            };
            let row = into.entry((n(0)?, n(1)?)).or_default();
            row.0 += n(2)?;
            row.1 += n(3)?;
        }
        Ok(rows.len())
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn the_first_events_of_seed_42_are_the_python_oracles() {
            // benches/pipeline_oracle.py: 0,5122,view,2826 / 1,2561,purchase,5726 / 2,8215,click,9734
            assert_eq!(super::event(42, 10_000, 0), (5122, 1, 2826));
            assert_eq!(super::event(42, 10_000, 1), (2561, 2, 5726));
            assert_eq!(super::event(42, 10_000, 2), (8215, 0, 9734));
        }
    }
}

/// Copies finished task `source` (its steps, edges and history) `n` times with new ids, each
/// copy completed `age` ago (a millisecond apart), in one transaction: old finished work for a
/// purge to find, made at the speed of a bulk insert. A copy's ids are md5 digests of the
/// original's and its number, salted per call, so no statement joins copies to originals.
/// Returns the copies' ids.
pub async fn copy_finished_task(
    database_url: &str,
    source: Uuid,
    n: i64,
    age: chrono::Duration,
) -> anyhow::Result<Vec<Uuid>> {
    let mut db = sqlx::PgConnection::connect(database_url).await?;
    let mut tx = sqlx::Connection::begin(&mut db).await?;
    let salt = Uuid::now_v7().to_string();
    let copy = |id: &str| format!("md5($3 || g || {id}::text)::uuid");
    let task = copy("'task'");
    let at = "clock_timestamp() - make_interval(secs => ($4::bigint + g) / 1000.0)";
    // Every column as it is, but those given.
    let columns = |table: &'static str| {
        sqlx::query_scalar::<_, String>(
            "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
             WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
        )
        .bind(table)
    };
    let task_cols = columns("tasks").fetch_one(&mut *tx).await?;
    let step_cols = columns("steps").fetch_one(&mut *tx).await?;
    let replaced = |cols: &str, alias: &str, with: &[(&str, &str)]| -> String {
        cols.split(", ")
            .map(|c| match with.iter().find(|(name, _)| *name == c) {
                Some((_, expr)) => expr.to_string(),
                None => format!("{alias}.{c}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let statements = [
        format!(
            "INSERT INTO tasks ({task_cols}) SELECT {} FROM generate_series(1, $2) AS g
             CROSS JOIN tasks t WHERE t.id = $1",
            replaced(
                &task_cols,
                "t",
                &[
                    ("id", task.as_str()),
                    ("idempotency_key", "NULL"),
                    ("created_at", at),
                    ("completed_at", at)
                ]
            )
        ),
        format!(
            "INSERT INTO steps ({step_cols}) SELECT {} FROM generate_series(1, $2) AS g
             CROSS JOIN steps s WHERE s.task_id = $1",
            replaced(
                &step_cols,
                "s",
                &[("id", copy("s.id").as_str()), ("task_id", task.as_str())]
            )
        ),
        format!(
            "INSERT INTO step_edges (task_id, parent_id, child_id)
             SELECT {task}, {}, {}
             FROM generate_series(1, $2) AS g CROSS JOIN step_edges e WHERE e.task_id = $1",
            copy("e.parent_id"),
            copy("e.child_id")
        ),
        format!(
            "INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, at)
             SELECT {task}, CASE WHEN h.step_id IS NOT NULL THEN {} END, h.from_state,
                    h.to_state, h.attempt, h.reason, h.at
             FROM generate_series(1, $2) AS g CROSS JOIN transitions h WHERE h.task_id = $1",
            copy("h.step_id")
        ),
    ];
    for sql in &statements {
        sqlx::query(sql)
            .bind(source)
            .bind(n)
            .bind(&salt)
            .bind(age.num_milliseconds())
            .execute(&mut *tx)
            .await?;
    }
    let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
        "SELECT {task} FROM generate_series(1, $2) AS g WHERE $1::uuid IS NOT NULL
           AND $4::bigint IS NOT NULL"
    ))
    .bind(source)
    .bind(n)
    .bind(&salt)
    .bind(age.num_milliseconds())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    db.close().await?;
    Ok(ids)
}
