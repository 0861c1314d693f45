//! The test kit's workflow environment (`tasker_worker::testing::WorkflowEnv`, docs/testing.md):
//! a week-long sleep, a signal wait that times out after three days (and one that gets its
//! signal), a step retried twice with hourly exponential backoff and a daily schedule run on
//! the real engine in test mode, each in well under a second of wall time with time skipping;
//! the same scenarios, with their durations made seconds, run against a normal orchestrator
//! and give the same outcomes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tasker::{RunningOrchestrator, RunningWorker, TestEnv, repo_root};
use tasker_client::{Client, CreateTask, ScheduleSpec, Task, TaskQuery};
use tasker_worker::handler::{HandlerError, Registry, StepContext};
use tasker_worker::testing::WorkflowEnv;
use tasker_worker::{RustHost, Worker, WorkerOptions};
use uuid::Uuid;

const NS: &str = "test_kit";
const WAIT: Duration = Duration::from_secs(60);

fn templates() -> PathBuf {
    repo_root().join("tests/fixtures/test_kit/templates")
}

/// The handlers every language's example registers (tests/fixtures/test_kit/README.md).
fn kit() -> Registry {
    let mut r = Registry::new();
    r.register("kit_stamp", |ctx: StepContext| async move {
        Ok(json!({ "step": ctx.step_name }))
    });
    r.register("kit_flaky", |ctx: StepContext| async move {
        if ctx.attempt < 3 {
            return Err(HandlerError::retryable(
                "flaky",
                format!("attempt {} fails", ctx.attempt),
            ));
        }
        Ok(json!({ "attempts": ctx.attempt }))
    });
    r.register("kit_echo", |ctx: StepContext| async move {
        Ok(Value::Object(ctx.parent_results.all().await?.clone()))
    });
    r
}

/// Where a scenario runs: the test environment (its clock skips) or a normal orchestrator.
enum World<'a> {
    Skipping(&'a WorkflowEnv),
    Normal(&'a RunningOrchestrator),
}

impl World<'_> {
    fn client(&self) -> &Client {
        match self {
            World::Skipping(env) => env.client(),
            World::Normal(o) => &o.client,
        }
    }

    async fn wait(&self, id: Uuid) -> anyhow::Result<Task> {
        Ok(match self {
            World::Skipping(env) => env.wait(id, WAIT).await?,
            World::Normal(o) => o.client.wait(id, WAIT).await?,
        })
    }

    /// Runs template `name` to its end; `signal` is sent to it first.
    async fn run(&self, name: &str, signal: Option<Value>) -> anyhow::Result<Value> {
        let task = self
            .client()
            .create_task(&CreateTask::new(NS, name))
            .await?;
        if let Some(payload) = signal {
            self.client()
                .signal(task.id, "approved", Some(payload), None)
                .await?;
        }
        let done = self.wait(task.id).await?;
        outcome(self.client(), &done).await
    }
}

/// What a scenario came to: the task's state, and each step's state, attempts and result.
async fn outcome(client: &Client, task: &Task) -> anyhow::Result<Value> {
    let mut steps = client.steps(task.id).await?;
    steps.sort_by(|a, b| a.name.cmp(&b.name));
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| json!([s.name, s.state, s.attempt, s.result.as_ref().map(timeless)]))
        .collect();
    Ok(json!({ "state": task.state, "steps": steps }))
}

/// `v` with the value of every `*_at` key (a wait's `woke_at`) made `"<time>"`: the times
/// differ between the two clocks, not the outcome.
fn timeless(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if k.ends_with("_at") {
                        json!("<time>")
                    } else {
                        timeless(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Engine time between two steps' ends (when the orchestrator applied them: a worker's own
/// `finished_at` is its wall clock).
async fn apart(
    client: &Client,
    task: Uuid,
    first: &str,
    last: &str,
) -> anyhow::Result<chrono::Duration> {
    let steps = client.steps(task).await?;
    let end = |name: &str| {
        steps
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.processed_at)
            .ok_or_else(|| anyhow::anyhow!("step {name} has not ended"))
    };
    Ok(end(last)? - end(first)?)
}

/// The report tasks a schedule started, oldest first.
async fn reports(client: &Client) -> anyhow::Result<Vec<Task>> {
    let q = TaskQuery {
        namespace: Some(NS.into()),
        name: Some("report".into()),
        ..TaskQuery::default()
    };
    let mut tasks = client.tasks(&q).await?.tasks;
    tasks.reverse();
    Ok(tasks)
}

fn schedule(cron: &str) -> ScheduleSpec {
    serde_json::from_value(json!({
        "namespace": NS, "name": "daily", "template": "report", "cron": cron
    }))
    .expect("a schedule spec")
}

/// The scenarios in `world`, each with its wall time.
async fn scenarios(world: &World<'_>) -> anyhow::Result<Vec<(&'static str, Value, Duration)>> {
    let mut out = Vec::new();
    let approved = json!({ "by": "ana" });
    for (label, name, signal) in [
        ("a week's sleep", "week", None),
        ("a signal that never comes", "approval", None),
        ("a signal that comes", "approval", Some(approved)),
        ("two retries an hour and two apart", "flaky", None),
    ] {
        let started = Instant::now();
        let outcome = world.run(name, signal).await?;
        out.push((label, outcome, started.elapsed()));
    }
    Ok(out)
}

#[tokio::test]
async fn days_of_waits_retries_and_schedules_pass_in_under_a_second_each() -> anyhow::Result<()> {
    tasker_client::install_crypto_provider();
    let env = WorkflowEnv::start(kit(), &templates()).await?;
    let world = World::Skipping(&env);
    let client = env.client();
    let ran = scenarios(&world).await?;
    for (label, outcome, wall) in &ran {
        assert_eq!(outcome["state"], "complete", "{label}: {outcome}");
        assert!(
            *wall < Duration::from_secs(1),
            "{label} took {wall:?} of wall time"
        );
        eprintln!("{label}: {wall:?}");
    }
    assert_eq!(
        ran[1].1["steps"][1][3],
        json!({ "ask": { "timed_out": true } })
    );
    assert_eq!(ran[2].1["steps"][1][3]["ask"], json!({ "by": "ana" }));
    assert_eq!(ran[3].1["steps"][0][2], 3);

    // The engine's clock passed the sleep and the backoffs; the wall clock did not.
    let week = client.create_task(&CreateTask::new(NS, "week")).await?;
    env.wait(week.id, WAIT).await?;
    assert!(apart(client, week.id, "before", "after").await? >= chrono::Duration::days(7));
    let flaky = client.create_task(&CreateTask::new(NS, "flaky")).await?;
    env.wait(flaky.id, WAIT).await?;
    let step = &client.steps(flaky.id).await?[0];
    let backoffs = step.processed_at.expect("applied") - flaky.created_at;
    assert!(
        backoffs >= chrono::Duration::hours(3),
        "1 h + 2 h of backoff, got {backoffs}"
    );

    // A daily schedule: each skip lands on its next fire, whose report runs.
    let started = Instant::now();
    let before = env.now().await?;
    client.put_schedule(&schedule("0 6 * * *")).await?;
    for day in 1..=2 {
        let skipped = env.skip().await?;
        assert!(skipped.skipped, "{skipped:?}");
        assert_eq!(skipped.clock.now.format("%H:%M").to_string(), "06:00");
        let tasks = reports(client).await?;
        assert_eq!(tasks.len(), day, "one report a day");
        let done = env.wait(tasks[day - 1].id, WAIT).await?;
        assert_eq!(done.state, "complete");
    }
    let passed = env.now().await? - before;
    assert!(
        passed > chrono::Duration::days(1),
        "two fires a day apart: {passed}"
    );
    let wall = started.elapsed();
    assert!(
        wall < Duration::from_secs(1),
        "two days of schedule took {wall:?}"
    );
    eprintln!("a daily schedule, two days: {wall:?}");

    // Advancing moves it by as much.
    let a = env.now().await?;
    let clock = env.advance("3d").await?;
    assert!(clock.now - a >= chrono::Duration::days(3));
    env.stop().await;
    Ok(())
}

/// The same scenarios, in seconds, on a normal orchestrator (no test mode): the same outcomes.
#[tokio::test]
async fn the_same_scenarios_on_a_normal_cluster_end_the_same() -> anyhow::Result<()> {
    let test = TestEnv::new().await?;
    let o = test.orchestrator().await?;
    // Its clock is the wall clock, and stays so.
    let refused = o.client.advance_clock("7d").await.unwrap_err();
    assert!(refused.to_string().contains("test_clock_off"), "{refused}");
    assert_eq!(o.client.clock().await?.skew_ms, 0);
    for entry in std::fs::read_dir(templates())? {
        let path = entry?.path();
        let yaml = std::fs::read_to_string(&path)?
            .replace("sleep: 7d", "sleep: 1s")
            .replace("timeout: 3d", "timeout: 1s")
            .replace(
                "base_ms: 3600000, max_ms: 86400000",
                "base_ms: 100, max_ms: 1000",
            );
        let file = path.file_name().and_then(|f| f.to_str()).map(str::to_owned);
        o.client
            .register_template(&yaml, file.as_deref(), None)
            .await?;
    }
    let w = &test.config.worker;
    let host = Arc::new(RustHost::new(kit(), w.concurrency));
    let worker = RunningWorker::start(Worker::new(
        WorkerOptions::from_config(&test.config, vec![NS.into()]),
        host,
    ));
    let normal = scenarios(&World::Normal(&o)).await?;

    let env = WorkflowEnv::start(kit(), &templates()).await?;
    let skipping = scenarios(&World::Skipping(&env)).await?;
    for ((label, a, _), (_, b, _)) in normal.iter().zip(&skipping) {
        assert_eq!(
            a, b,
            "{label}: a normal cluster and the test environment differ"
        );
    }
    // A schedule every second there, daily here: the report it starts ends alike.
    o.client.put_schedule(&schedule("* * * * * *")).await?;
    let first = o
        .until(WAIT, "a report from the schedule", || async {
            Ok(reports(&o.client).await?.into_iter().next())
        })
        .await?;
    let normal_report = outcome(&o.client, &o.client.wait(first.id, WAIT).await?).await?;
    env.client().put_schedule(&schedule("0 6 * * *")).await?;
    env.skip().await?;
    let here = reports(env.client()).await?;
    let skipping_report = outcome(env.client(), &env.wait(here[0].id, WAIT).await?).await?;
    assert_eq!(normal_report, skipping_report);
    env.stop().await;
    worker.stop().await;
    o.stop().await;
    test.cleanup().await
}

// docs/testing.md's Rust workflow test, as written there (checked below).
#[tokio::test]
async fn a_week_passes_at_once() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.register("kit_stamp", |ctx: StepContext| async move {
        Ok(json!({ "step": ctx.step_name }))
    });
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/test_kit/templates");
    let env = WorkflowEnv::start(registry, &templates).await?;
    let task = env
        .client()
        .create_task(&CreateTask::new("test_kit", "week"))
        .await?;
    assert_eq!(
        env.wait(task.id, Duration::from_secs(30)).await?.state,
        "complete"
    );
    env.stop().await;
    Ok(())
}

#[test]
fn the_docs_rust_workflow_test_is_the_one_above() {
    let docs = std::fs::read_to_string(repo_root().join("docs/testing.md")).unwrap();
    let source = include_str!("test_kit.rs");
    let start = "#[tokio::test]\nasync fn a_week_passes_at_once()";
    let test = &source[source.find(start).unwrap()..];
    let test = &test[..test.find("\n}\n").unwrap() + 3];
    assert!(
        docs.contains(test),
        "docs/testing.md's Rust workflow test differs from:\n{test}"
    );
}

/// On an orchestrator with tokens whose clock is in test mode, moving the clock still needs an
/// admin token of every namespace: an admin of one namespace is refused and the clock does not
/// move (it would ring every other namespace's timers); the unscoped admin moves it.
#[tokio::test]
async fn only_an_admin_of_every_namespace_moves_a_test_clock() -> anyhow::Result<()> {
    let mut test = TestEnv::new().await?;
    test.config.orchestrator.auth = tasker_shared::config::AuthMode::Tokens;
    let created = std::process::Command::new(tasker::workspace_binary("tasker-orchestrator")?)
        .args(["token", "create", "root", "--scope", "admin"])
        .env("DATABASE_URL", &test.config.database_url)
        .env("TASKER_DATABASE_URL", &test.config.database_url)
        .output()?;
    anyhow::ensure!(created.status.success(), "{created:?}");
    let root = String::from_utf8(created.stdout)?.trim().to_owned();
    let o = test.orchestrator().await?;
    o.shared.store.use_test_clock().await?;
    let admin = Client::with_token(&o.url(), Some(&root));
    let minted: Value = reqwest::Client::new()
        .post(format!("{}/v1/tokens", o.url()))
        .bearer_auth(&root)
        .json(&json!({"name": "kit-admin", "scope": "admin", "namespaces": [NS]}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let scoped = Client::with_token(&o.url(), minted["token"].as_str());

    for refused in [
        scoped.advance_clock("7d").await.map(|_| ()),
        scoped.skip_clock().await.map(|_| ()),
    ] {
        let refused = refused.unwrap_err().to_string();
        assert!(refused.contains("forbidden"), "{refused}");
    }
    assert_eq!(scoped.clock().await?.skew_ms, 0, "a refused move moved it");
    let moved = admin.advance_clock("7d").await?;
    assert!(moved.skew_ms >= 7 * 86_400_000, "{moved:?}");
    test.cleanup().await
}

/// `tasker-orchestrator test-env` with no broker where it is told to look fails at once,
/// saying where it looked (without the URL's credentials) and how to start one, instead of
/// serving and retrying in the background while the test waits.
#[tokio::test]
async fn a_test_env_without_a_broker_says_so_at_once() -> anyhow::Result<()> {
    let test = TestEnv::new().await?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("amqp://guest:guest@127.0.0.1:{closed}/%2f");
    let out = tokio::process::Command::new(tasker::workspace_binary("tasker-orchestrator")?)
        .arg("test-env")
        .env("DATABASE_URL", &test.config.database_url)
        .env("TASKER_DATABASE_URL", &test.config.database_url)
        .env("AMQP_URL", &url)
        .env("TASKER_AMQP_URL", &url)
        .stdin(std::process::Stdio::piped())
        .output();
    let out = tokio::time::timeout(WAIT, out).await??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "it served: {:?}", out.stdout);
    assert!(
        stderr.contains(&format!(
            "connecting to RabbitMQ at amqp://127.0.0.1:{closed}"
        )) && stderr.contains("AMQP_URL")
            && !stderr.contains("guest:guest"),
        "{stderr}"
    );
    test.cleanup().await
}
