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

/// A task of `template` (registered as `template_id`) to create now, with nothing but its
/// context and idempotency key.
pub fn new_task(
    template_id: uuid::Uuid,
    template: &tasker_shared::template::Loaded,
    context: Value,
    idempotency_key: Option<String>,
) -> tasker_orchestration::store::NewTask<'_> {
    tasker_orchestration::store::NewTask {
        template_id,
        template,
        context,
        idempotency_key,
        run_at: None,
        children: Vec::new(),
        parent: None,
        priority: Default::default(),
        token_id: None,
        controls: Default::default(),
        deadline: None,
    }
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

/// The transitions recorded for a step (or, with `None`, for the task itself) into `to`.
pub async fn transitions_into<'e>(
    db: impl sqlx::PgExecutor<'e>,
    task: Uuid,
    step: Option<Uuid>,
    to: &str,
) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM transitions
         WHERE task_id = $1 AND step_id IS NOT DISTINCT FROM $2 AND to_state = $3",
    )
    .bind(task)
    .bind(step)
    .bind(to)
    .fetch_one(db)
    .await?)
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

pub mod black_hole;
pub mod letters;
pub mod proxy;
pub mod scrape;
pub mod tokens;

mod env;
mod fixtures;
mod orchestrator;
mod worker;

pub use env::{TestEnv, local_replica_url, stop_local_replica};
pub use fixtures::copy_finished_task;
pub use orchestrator::{Completions, KeptDeadLetters, RunningOrchestrator};
pub use worker::{Cluster, RunningWorker};

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
