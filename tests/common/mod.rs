//! Shared by the test binaries that run workers and orchestrators as real processes: the
//! conformance scenarios and how to start a worker or an orchestrator.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use serde_json::Value;
use tasker::{TestEnv, line_containing, repo_root, workspace_binary};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub template: String,
    pub context: Value,
    pub state: String,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub steps: BTreeMap<String, StepExpectation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepExpectation {
    pub state: String,
    #[serde(default)]
    pub attempt: Option<i32>,
    #[serde(default)]
    pub error_kind: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
}

pub fn scenarios() -> anyhow::Result<Vec<Scenario>> {
    let path = repo_root().join("tests/conformance/scenarios.yaml");
    let src = std::fs::read_to_string(&path)?.replace("{repo}", &repo_root().to_string_lossy());
    serde_norway::from_str(&src).with_context(|| format!("parsing {}", path.display()))
}

/// How to start a language's worker: its conformance entry point with the fixture handlers.
pub fn worker_command(language: &str) -> anyhow::Result<Command> {
    worker_command_on(language, &tasker::templates(language))
}

/// [`worker_command`] serving the templates of `templates`.
pub fn worker_command_on(language: &str, templates: &std::path::Path) -> anyhow::Result<Command> {
    let mut cmd = if language == "rust" {
        Command::new(workspace_binary("tasker-worker-rust")?)
    } else {
        let entry: PathBuf = repo_root()
            .join("workers")
            .join(language)
            .join("conformance-worker");
        anyhow::ensure!(
            entry.exists(),
            "{} is missing: build the {language} binding first (cargo make test does)",
            entry.display()
        );
        Command::new(entry)
    };
    cmd.arg("--templates")
        .arg(templates)
        .arg("--health-port")
        .arg("0");
    Ok(cmd)
}

/// Where this test binary's processes keep their logs when it asked for it ([`keep_logs`]).
static KEPT_LOGS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Keeps every process's log of this test binary from now on, in a folder of its own under
/// `target/test-logs/` (unless `$TASKER_TEST_LOG_DIR` says where): a test whose failure needs
/// them (a fault run) then says where they are. Returns the folder.
pub fn keep_logs(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("TASKER_TEST_LOG_DIR") {
        return PathBuf::from(dir);
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    KEPT_LOGS
        .get_or_init(|| {
            tasker::target_dir()
                .join("test-logs")
                .join(format!("{name}-{stamp}-{}", std::process::id()))
        })
        .clone()
}

/// Where a test process named `name` writes its log: `$TASKER_TEST_LOG_DIR/<name>.log` when
/// that is set (to read what a failed multi-process test did), or the folder of [`keep_logs`],
/// else nowhere (`None`).
pub fn log_file(name: &str) -> anyhow::Result<Option<std::fs::File>> {
    let Some(dir) = std::env::var_os("TASKER_TEST_LOG_DIR")
        .map(PathBuf::from)
        .or_else(|| KEPT_LOGS.get().cloned())
    else {
        return Ok(None);
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.log"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    Ok(Some(file))
}

/// A worker process and the address of its `/health`.
pub struct WorkerProcess {
    pub child: Child,
    pub health: String,
}

/// Starts a worker reporting itself as `name`, registering its templates with the
/// orchestrator at `orchestrator` (a base URL), and waits for its ready line.
pub async fn start_worker(
    env: &TestEnv,
    language: &str,
    name: &str,
    orchestrator: &str,
) -> anyhow::Result<WorkerProcess> {
    start_worker_with(env, language, name, orchestrator, &[]).await
}

/// [`start_worker`] with more environment variables (e.g. `TASKER_WORKER__…` settings).
pub async fn start_worker_with(
    env: &TestEnv,
    language: &str,
    name: &str,
    orchestrator: &str,
    vars: &[(&str, &str)],
) -> anyhow::Result<WorkerProcess> {
    start_worker_on(
        env,
        language,
        name,
        orchestrator,
        &tasker::templates(language),
        vars,
    )
    .await
}

/// [`start_worker_with`] serving the templates of `templates`.
pub async fn start_worker_on(
    env: &TestEnv,
    language: &str,
    name: &str,
    orchestrator: &str,
    templates: &std::path::Path,
    vars: &[(&str, &str)],
) -> anyhow::Result<WorkerProcess> {
    let cfg = &env.config;
    let mut child = worker_command_on(language, templates)?
        .envs(vars.iter().copied())
        .env("TASKER_WORKER__NAME", name)
        .env("TASKER_WORKER__ORCHESTRATOR_URL", orchestrator)
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(log_file(name)?.map_or_else(Stdio::null, Stdio::from))
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the {language} worker"))?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    let what = format!("the {language} worker");
    let ready = line_containing(
        &mut lines,
        "tasker worker ready",
        Duration::from_secs(60),
        &what,
    )
    .await?;
    let health = ready
        .split_whitespace()
        .find_map(|w| w.strip_prefix("health="))
        .unwrap_or_default()
        .to_owned();
    // Keep draining its stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(WorkerProcess { child, health })
}

/// An orchestrator process (the `tasker-orchestrator` binary) and the client that talks to it.
pub struct OrchestratorProcess {
    pub child: Child,
    pub client: tasker_client::Client,
    pub port: u16,
}

pub async fn start_orchestrator(env: &TestEnv, port: u16) -> anyhow::Result<OrchestratorProcess> {
    start_orchestrator_with(env, port, &[]).await
}

/// [`start_orchestrator`] with more environment variables (`TASKER_ORCHESTRATOR__…` settings).
pub async fn start_orchestrator_with(
    env: &TestEnv,
    port: u16,
    vars: &[(&str, &str)],
) -> anyhow::Result<OrchestratorProcess> {
    let cfg = &env.config;
    let mut child = Command::new(workspace_binary("tasker-orchestrator")?)
        .arg("--bind")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--templates")
        .arg(repo_root().join("tests/fixtures/task_templates"))
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("TASKER_ORCHESTRATOR__AUTH", "off")
        .env("TASKER_ORCHESTRATOR__SWEEP_INTERVAL_MS", "250")
        // A publication lost with a killed orchestrator is re-sent after 3 s, not 30.
        .env("TASKER_ORCHESTRATOR__VISIBILITY_TIMEOUT_MS", "3000")
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG")
                .unwrap_or("warn,tasker_orchestrator=info,tasker_orchestration=info".into()),
        )
        .env("NO_COLOR", "1")
        .envs(vars.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    tasker::line_containing(
        &mut lines,
        "tasker-orchestrator listening",
        Duration::from_secs(60),
        "the orchestrator",
    )
    .await?;
    // Keep draining its log, into $TASKER_TEST_LOG_DIR if set.
    let mut log = log_file(&format!("orchestrator-{port}-{}", child.id().unwrap_or(0)))?;
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(file) = log.as_mut() {
                let _ = writeln!(file, "{line}");
            }
        }
    });
    Ok(OrchestratorProcess {
        child,
        client: tasker_client::Client::new(&format!("http://127.0.0.1:{port}")),
        port,
    })
}

pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
