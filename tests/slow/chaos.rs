//! The fault suite (`cargo make chaos`; a short form runs with the tests): tasks of every
//! conformance scenario, in every language, across two orchestrators and two workers per
//! language — all real processes — while workers and orchestrators are SIGKILLed mid-flight,
//! RabbitMQ and PostgreSQL restart, and duplicate, stale and poison results are injected. Then,
//! from the database and the workers' own counters: no task lost, none stuck, no transition
//! applied twice, every result correct; and how many handler executions were repeated and how
//! long the system took to complete a new task after each fault.
//!
//! `TASKER_CHAOS_TASKS` sets the number of tasks (default 84; `cargo make chaos` runs 350).
//! A test binary of its own: restarting the servers must not disturb other tests.
//!
//! The fault run is in `faults`; `quorum` runs on a 3-node RabbitMQ cluster with quorum queues
//! and SIGKILLs the node leading them. What both share — the processes, creating tasks and
//! waiting for them through whichever orchestrator answers, the recovery probe, the checks of
//! transitions applied twice — is here.

#[path = "../common/mod.rs"]
mod common;
#[path = "chaos/faults.rs"]
mod faults;
#[path = "chaos/quorum.rs"]
mod quorum;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use uuid::Uuid;

use tasker::TestEnv;
use tasker_client::{Client, CreateTask};

use common::{OrchestratorProcess, Scenario, WorkerProcess, start_orchestrator, start_worker};

/// Steps a worker has received, from its `/health` (`None` if it does not answer).
async fn received(health: &str) -> Option<u64> {
    let v: Value = reqwest::get(format!("http://{health}/health"))
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    v["received"].as_u64()
}

struct Cluster {
    env: TestEnv,
    orchestrators: Vec<OrchestratorProcess>,
    workers: Vec<(&'static str, WorkerProcess)>,
    /// Steps received by workers that were killed, read just before the kill.
    received_by_the_dead: u64,
    next_worker: usize,
}

impl Cluster {
    /// No process yet, on `env`.
    fn new(env: TestEnv) -> Cluster {
        Cluster {
            env,
            orchestrators: Vec::new(),
            workers: Vec::new(),
            received_by_the_dead: 0,
            next_worker: 0,
        }
    }

    /// Kills every worker and orchestrator, then drops the test's database and queues.
    async fn shutdown(mut self) -> anyhow::Result<()> {
        for (_, mut w) in std::mem::take(&mut self.workers) {
            let _ = w.child.start_kill();
            let _ = w.child.wait().await;
        }
        for mut o in std::mem::take(&mut self.orchestrators) {
            let _ = o.child.start_kill();
            let _ = o.child.wait().await;
        }
        self.env.cleanup().await
    }

    /// A client of a live orchestrator, `k` choosing among them.
    fn client(&self, k: usize) -> &Client {
        &self.orchestrators[k % self.orchestrators.len()].client
    }

    async fn add_worker(&mut self, language: &'static str) -> anyhow::Result<()> {
        self.next_worker += 1;
        let name = format!("{language}-{}", self.next_worker);
        // Registration goes to the first orchestrator; while it is down the worker starts
        // anyway and retries (its templates are registered already).
        let orchestrator = format!("http://127.0.0.1:{}", self.orchestrators[0].port);
        let w = start_worker(&self.env, language, &name, &orchestrator).await?;
        self.workers.push((language, w));
        Ok(())
    }

    /// SIGKILLs the first worker of `language` and starts a replacement.
    async fn kill_worker(&mut self, language: &'static str) -> anyhow::Result<()> {
        let i = self
            .workers
            .iter()
            .position(|(l, _)| *l == language)
            .context("no such worker")?;
        let (_, mut w) = self.workers.remove(i);
        self.received_by_the_dead += received(&w.health).await.unwrap_or(0);
        w.child.start_kill()?;
        w.child.wait().await?;
        self.add_worker(language).await
    }

    /// SIGKILLs orchestrator `i` and starts it again on the same port.
    async fn kill_orchestrator(&mut self, i: usize) -> anyhow::Result<()> {
        let o = &mut self.orchestrators[i];
        o.child.start_kill()?;
        o.child.wait().await?;
        let port = o.port;
        self.orchestrators[i] = start_orchestrator(&self.env, port).await?;
        Ok(())
    }
}

/// Creates the `i`-th task (idempotently, so a retry after a lost answer creates nothing
/// new), trying each orchestrator until one answers.
async fn create(
    cluster: &Cluster,
    i: usize,
    namespace: &str,
    s: &Scenario,
) -> anyhow::Result<Uuid> {
    let request = CreateTask::new(namespace, &s.template)
        .context(s.context.clone())
        .idempotency_key(format!("chaos-{i}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut k = i;
    loop {
        match cluster.client(k).create_task(&request).await {
            Ok(t) => return Ok(t.id),
            Err(e) if Instant::now() < deadline => {
                note(&format!(
                    "create chaos-{i}: {e}; trying the next orchestrator"
                ));
                k += 1;
                // Backoff between attempts while an orchestrator or the database is down.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn note(s: &str) {
    eprintln!("chaos: {s}");
}

/// Waits for a task to be terminal, through whichever orchestrator answers.
async fn finished(
    cluster: &Cluster,
    id: Uuid,
    within: Duration,
) -> anyhow::Result<tasker_client::Task> {
    let deadline = Instant::now() + within;
    let mut k = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            anyhow::bail!(
                "task {id} not terminal within {within:?}; {}",
                stuck_report(cluster, id).await
            );
        }
        let wait = left.min(Duration::from_secs(30));
        match cluster.client(k).task(id, Some(wait)).await {
            Ok(t) if t.is_terminal() => return Ok(t),
            Ok(_) => {}
            Err(_) => {
                k += 1;
                // Backoff between attempts while an orchestrator or the database is down.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// What a task that did not end is waiting for: its state and each unfinished step's.
async fn stuck_report(cluster: &Cluster, id: Uuid) -> String {
    let client = cluster.client(0);
    let task = match client.task(id, None).await {
        Ok(t) => format!("{}/{} {}", t.namespace, t.name, t.state),
        Err(e) => format!("task unreadable: {e}"),
    };
    let steps = match client.steps(id).await {
        Ok(steps) => steps
            .iter()
            .filter(|s| !matches!(s.state.as_str(), "completed" | "skipped"))
            .map(|s| {
                format!(
                    "{} {} attempt {}/{} dispatched {:?} started {:?} finished {:?} worker {:?} error {:?}",
                    s.name,
                    s.state,
                    s.attempt,
                    s.max_attempts,
                    s.dispatched_at,
                    s.started_at,
                    s.finished_at,
                    s.worker,
                    s.error
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => format!("steps unreadable: {e}"),
    };
    format!("{task}; unfinished steps: {steps}")
}

/// Time until a new task completes after a fault: the recovery time.
async fn recovery(
    cluster: &Cluster,
    probe: &mut usize,
    started: Instant,
) -> anyhow::Result<Duration> {
    *probe += 1;
    let s = Scenario {
        name: "probe".into(),
        template: "linear".into(),
        context: json!({"value": 1}),
        state: "complete".into(),
        result: Some(json!({"halve": {"value": 72}})),
        steps: BTreeMap::new(),
    };
    let id = create(cluster, 1_000_000 + *probe, "rust_examples", &s).await?;
    let t = finished(cluster, id, Duration::from_secs(120)).await?;
    anyhow::ensure!(t.state == "complete", "probe task {id} ended {}", t.state);
    Ok(started.elapsed())
}

/// The two tests of this binary restart or kill servers: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Step transitions recorded twice for one attempt (and, with `tasks`, task transitions recorded
/// twice). A `running` transition is an observation, one per worker that ran the attempt — two
/// live copies at once: a worker whose connection dropped while its handler ran on, and the one
/// that took the redelivery — counted by [`run_on_two_workers`], not here.
async fn applied_twice(
    pool: &sqlx::PgPool,
    tasks: bool,
) -> anyhow::Result<Vec<(Option<Uuid>, Option<i32>, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT step_id, attempt, to_state, count(*) FROM transitions
         WHERE step_id IS NOT NULL AND to_state <> 'running'
         GROUP BY 1, 2, 3 HAVING count(*) > 1
         UNION ALL
         SELECT NULL, NULL, task_id::text || ' ' || to_state, count(*) FROM transitions
         WHERE $1 AND step_id IS NULL GROUP BY task_id, to_state HAVING count(*) > 1",
    )
    .bind(tasks)
    .fetch_all(pool)
    .await?)
}

/// Step attempts seen running on two workers.
async fn run_on_two_workers(pool: &sqlx::PgPool) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM transitions WHERE to_state = 'running'
                               GROUP BY step_id, attempt HAVING count(*) > 1) r",
    )
    .fetch_one(pool)
    .await?)
}
