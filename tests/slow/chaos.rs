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

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tokio::process::Command;
use uuid::Uuid;

use tasker::{TestEnv, repo_root};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::{Client, CreateTask};
use tasker_shared::{Outcome, StepResult};

use common::{
    OrchestratorProcess, Scenario, WorkerProcess, free_port, scenarios, start_orchestrator,
    start_worker,
};

const LANGUAGES: [&str; 4] = ["rust", "ruby", "python", "typescript"];

async fn services(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(repo_root().join("cargo-make/services.sh"))
        .args(args)
        .stdout(Stdio::null())
        .status()
        .await?;
    anyhow::ensure!(status.success(), "services.sh {args:?} failed: {status}");
    Ok(())
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_lose_nothing_and_apply_every_transition_once() -> anyhow::Result<()> {
    let _one_at_a_time = SERIAL.lock().await;
    let tasks: usize = std::env::var("TASKER_CHAOS_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(84);
    let env = TestEnv::new().await?;
    let cfg = env.config.clone();
    let mut cluster = Cluster::new(env);
    for _ in 0..2 {
        let o = start_orchestrator(&cluster.env, free_port()?).await?;
        cluster.orchestrators.push(o);
    }
    for language in LANGUAGES {
        for _ in 0..2 {
            cluster.add_worker(language).await?;
        }
    }
    // Not `timeout` (slow by design), nor `one_instance`: its steps may run on either of a
    // language's two workers, each with its own handler instance.
    let scenarios: Vec<Scenario> = scenarios()?
        .into_iter()
        .filter(|s| s.template != "timeout" && s.template != "one_instance")
        .collect();
    // Faults between waves of task creation. Each wave starts with two sleeping tasks per
    // language, so each fault lands on steps mid-run in every worker, then runs the conformance
    // scenarios round-robin over the languages.
    let faults: [&str; 6] = [
        "kill a Rust worker",
        "kill an orchestrator",
        "restart RabbitMQ",
        "restart PostgreSQL",
        "inject duplicate, stale and poison results",
        "kill a Python and a Ruby worker",
    ];
    let slow = Scenario {
        name: "slow_chain".into(),
        template: "slow_chain".into(),
        context: json!({"sleep_ms": 700}),
        state: "complete".into(),
        result: None,
        steps: BTreeMap::new(),
    };
    let wave = tasks.div_ceil(faults.len() + 1);
    let work: Vec<(String, &Scenario)> = (0..tasks)
        .map(|i| {
            let k = i % wave;
            let language = LANGUAGES[k % LANGUAGES.len()];
            let s = if k < 2 * LANGUAGES.len() {
                &slow
            } else {
                &scenarios[(i / LANGUAGES.len()) % scenarios.len()]
            };
            (format!("{language}_examples"), s)
        })
        .collect();
    let mut ids: Vec<Option<Uuid>> = vec![None; tasks];
    let mut recoveries: Vec<(&str, Duration)> = Vec::new();
    let mut probes = 0usize;
    let suite = Instant::now();
    for (w, chunk) in work.chunks(wave).enumerate() {
        for (j, (namespace, s)) in chunk.iter().enumerate() {
            let i = w * wave + j;
            ids[i] = Some(create(&cluster, i, namespace, s).await?);
        }
        let Some(fault) = faults.get(w) else { continue };
        let started = Instant::now();
        match *fault {
            "kill a Rust worker" => cluster.kill_worker("rust").await?,
            "kill an orchestrator" => cluster.kill_orchestrator(0).await?,
            "restart RabbitMQ" => {
                services(&["rabbitmqctl", "stop_app"]).await?;
                services(&["rabbitmqctl", "start_app"]).await?;
            }
            "restart PostgreSQL" => services(&["pg-restart"]).await?,
            "inject duplicate, stale and poison results" => {
                inject(&cluster, &cfg, &ids).await?;
            }
            _ => {
                cluster.kill_worker("python").await?;
                cluster.kill_worker("ruby").await?;
            }
        }
        let took = recovery(&cluster, &mut probes, started).await?;
        note(&format!(
            "{fault}: a new task completed {took:?} after the fault began"
        ));
        recoveries.push((fault, took));
    }

    // Every task ends, with the scenario's state and result.
    let mut wrong = Vec::new();
    for (i, (namespace, s)) in work.iter().enumerate() {
        let id = ids[i].context("task not created")?;
        let t = finished(&cluster, id, Duration::from_secs(180)).await?;
        if t.state != s.state || (s.result.is_some() && t.result != s.result) {
            wrong.push(format!(
                "{namespace}/{} {id}: {} {:?}",
                s.name, t.state, t.result
            ));
        }
    }
    let elapsed = suite.elapsed();
    let pool = sqlx::PgPool::connect(&cfg.database_url).await?;
    let work_ids: Vec<Uuid> = ids.iter().flatten().copied().collect();
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE id = ANY($1)")
        .bind(&work_ids)
        .fetch_one(&pool)
        .await?;
    let stuck: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE state = 'running'")
        .fetch_one(&pool)
        .await?;
    let twice = applied_twice(&pool, true).await?;
    let on_two_workers = run_on_two_workers(&pool).await?;
    let attempts: i64 = sqlx::query_scalar("SELECT COALESCE(sum(attempt), 0)::bigint FROM steps")
        .fetch_one(&pool)
        .await?;
    let mut received_total = cluster.received_by_the_dead;
    for (_, w) in &cluster.workers {
        received_total += received(&w.health).await.unwrap_or(0);
    }
    let report = json!({
        "tasks": tasks + probes,
        "faults": faults.len(),
        "elapsed_s": elapsed.as_secs_f64(),
        "lost": tasks as i64 - found,
        "stuck": stuck,
        "transitions_applied_twice": twice.len(),
        "attempts_run_on_two_workers": on_two_workers,
        "wrong_results": wrong.len(),
        "step_attempts": attempts,
        "deliveries_received_by_workers": received_total,
        "repeated_deliveries": received_total as i64 - attempts,
        "recovery_s": recoveries.iter().map(|(f, d)| (f.to_string(), json!(d.as_secs_f64()))).collect::<BTreeMap<_, _>>(),
    });
    println!("chaos report: {}", serde_json::to_string_pretty(&report)?);

    anyhow::ensure!(
        found == tasks as i64,
        "tasks lost: {found} of {tasks} found"
    );
    anyhow::ensure!(stuck == 0, "{stuck} tasks still running");
    anyhow::ensure!(twice.is_empty(), "transitions applied twice: {twice:?}");
    anyhow::ensure!(wrong.is_empty(), "wrong results:\n{}", wrong.join("\n"));

    pool.close().await;
    cluster.shutdown().await
}

/// Duplicates and stale copies of completed steps' results, and poison (random bytes, an
/// attempt beyond PostgreSQL's integer): all must change nothing.
async fn inject(
    cluster: &Cluster,
    cfg: &tasker_shared::Config,
    ids: &[Option<Uuid>],
) -> anyhow::Result<()> {
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "chaos").await?;
    let publisher = broker.publisher().await?;
    let queue = topology::results_queue(&cfg.queue_prefix);
    let mut out = Vec::new();
    for id in ids.iter().flatten().take(12) {
        let Ok(steps) = cluster.client(0).steps(*id).await else {
            continue;
        };
        for s in steps.into_iter().filter(|s| s.state == "completed") {
            for attempt in [s.attempt as u32, s.attempt as u32 + 5, 3_000_000_000] {
                let r = StepResult {
                    task_id: *id,
                    step_id: s.id,
                    attempt,
                    outcome: Outcome::Success {
                        result: json!({"forged": true}),
                    },
                    started_at: chrono::Utc::now(),
                    finished_at: chrono::Utc::now(),
                    worker: "chaos".into(),
                    traceparent: None,
                };
                out.push(Outgoing {
                    queue: queue.clone(),
                    payload: serde_json::to_vec(&r)?,
                });
            }
        }
    }
    out.push(Outgoing {
        queue: queue.clone(),
        payload: vec![0xff, 0x00, 0x13, 0x37],
    });
    publisher.publish_all(&out).await?;
    broker.close().await;
    note(&format!("injected {} forged results", out.len()));
    Ok(())
}

/// The two tests of this binary restart or kill servers: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Output of `services.sh ARGS` (its stdout, trimmed), which must succeed.
async fn services_out(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(repo_root().join("cargo-make/services.sh"))
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "services.sh {args:?} failed: {}",
        out.status
    );
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

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

/// Creates the tasks numbered `range` of the quorum run: every sixth a `slow_chain` of 300 ms
/// steps (mid-run when a fault comes), the rest `linear`.
async fn wave(cluster: &Cluster, range: std::ops::Range<i64>) -> anyhow::Result<Vec<Uuid>> {
    let mut ids = Vec::new();
    for i in range {
        let (template, context) = if i % 6 == 0 {
            ("slow_chain", json!({"sleep_ms": 300}))
        } else {
            ("linear", json!({"value": i}))
        };
        let s = Scenario {
            name: template.into(),
            template: template.into(),
            context,
            state: "complete".into(),
            result: None,
            steps: BTreeMap::new(),
        };
        ids.push(create(cluster, 2_000_000 + i as usize, "rust_examples", &s).await?);
    }
    Ok(ids)
}

/// With `broker.queue_type = "quorum"` on a 3-node RabbitMQ cluster (`services.sh
/// cluster-start`), the node leading the steps and results queues is SIGKILLed under load:
/// orchestrators and the worker move to another node, every task completes, none is lost and
/// no transition is applied twice. Then a message redelivered past the delivery limit (a
/// consumer that keeps handing it back) goes to the dead letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_broker_node_that_leads_the_queues_loses_nothing() -> anyhow::Result<()> {
    let _one_at_a_time = SERIAL.lock().await;
    let export = services_out(&["cluster-start"]).await?;
    let urls = export
        .lines()
        .find_map(|l| l.strip_prefix("export TASKER_CLUSTER_AMQP_URL="))
        .context("cluster-start printed no URL")?
        .trim_matches('"')
        .to_owned();
    let logs = common::keep_logs("quorum");
    let outcome = quorum_run(&urls).await;
    match &outcome {
        // Kept only to explain a failure, unless someone asked for them.
        Ok(()) if std::env::var_os("TASKER_TEST_LOG_DIR").is_none() => {
            let _ = std::fs::remove_dir_all(&logs);
        }
        Ok(()) => {}
        Err(_) => eprintln!("the logs of every process of this run: {}", logs.display()),
    }
    outcome
}

/// The body of [`losing_the_broker_node_that_leads_the_queues_loses_nothing`] on the cluster
/// of `urls`.
async fn quorum_run(urls: &str) -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.amqp_url = urls.to_owned();
    env.config.broker.queue_type = tasker_shared::config::QueueType::Quorum;
    let cfg = env.config.clone();
    let quorum = [
        ("TASKER_BROKER__QUEUE_TYPE", "quorum"),
        (
            "RUST_LOG",
            "info,tasker_broker=debug,tasker_worker=debug,tasker_orchestration=debug",
        ),
    ];
    let mut cluster = Cluster::new(env);
    for _ in 0..2 {
        let o = common::start_orchestrator_with(&cluster.env, free_port()?, &quorum).await?;
        cluster.orchestrators.push(o);
    }
    let url = format!("http://127.0.0.1:{}", cluster.orchestrators[0].port);
    let w = common::start_worker_with(&cluster.env, "rust", "rust-quorum", &url, &quorum).await?;
    cluster.workers.push(("rust", w));
    let steps = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
    let results = topology::results_queue(&cfg.queue_prefix);
    let types = services_out(&["cluster-ctl", "1", "list_queues", "name", "type"]).await?;
    for q in [&steps, &results] {
        anyhow::ensure!(
            types
                .lines()
                .any(|l| l.starts_with(q.as_str()) && l.ends_with("quorum")),
            "{q} is not a quorum queue: {types}"
        );
    }
    let mut ids = Vec::new();
    // Work in flight when the node goes: slow chains mid-run, linear tasks queued.
    ids.extend(wave(&cluster, 0..60).await?);
    let leader = services_out(&["cluster-leader", &steps]).await?;
    let results_leader = services_out(&["cluster-leader", &results]).await?;
    note(&format!(
        "steps queue led by {leader}, results queue by {results_leader}"
    ));
    let node = leader
        .strip_prefix("tasker")
        .and_then(|n| n.split('@').next())
        .context("leader's node number")?
        .to_owned();
    let started = Instant::now();
    services_out(&["cluster-kill", &node]).await?;
    note(&format!("SIGKILLed {leader}"));
    // Every consumer is back on a surviving node within its window: the worker on the steps
    // queue, both orchestrators on the results queue.
    let survivor = if node == "1" { "2" } else { "1" };
    consumers_back(
        survivor,
        &[(&steps, 1), (&results, 2)],
        Duration::from_secs(30),
    )
    .await?;
    note(&format!(
        "consumers re-established {:?} after the kill",
        started.elapsed()
    ));
    // More work while it is down, through whichever orchestrator answers.
    ids.extend(wave(&cluster, 60..120).await?);
    let mut probe = 0;
    let took = recovery(&cluster, &mut probe, started).await?;
    note(&format!(
        "a broker node lost (quorum queues): a new task completed {took:?} after the kill"
    ));
    for id in &ids {
        let t = finished(&cluster, *id, Duration::from_secs(180)).await?;
        anyhow::ensure!(t.state == "complete", "task {id} ended {}", t.state);
    }
    let pool = sqlx::PgPool::connect(&cfg.database_url).await?;
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_one(&pool)
        .await?;
    let twice = applied_twice(&pool, false).await?;
    println!(
        "chaos report (quorum): {}",
        json!({"tasks": ids.len() + probe, "lost": ids.len() as i64 - found,
               "transitions_applied_twice": twice.len(), "node_killed": leader,
               "recovery_s": took.as_secs_f64()})
    );
    anyhow::ensure!(
        found == ids.len() as i64,
        "tasks lost: {found} of {}",
        ids.len()
    );
    anyhow::ensure!(twice.is_empty(), "transitions applied twice: {twice:?}");
    services_out(&["cluster-node-start", &node]).await?;

    // A message nobody can take: handed back again and again until the delivery limit sends
    // it to the dead letters, where the orchestrators keep it.
    let broker = Broker::connect(urls, &cfg.queue_prefix, "chaos-poison")
        .await?
        .quorum(true);
    broker.declare(&["quorum_poison".to_owned()]).await?;
    let queue = topology::steps_queue(&cfg.queue_prefix, "quorum_poison");
    broker
        .publisher()
        .await?
        .publish_all(&[Outgoing {
            queue: queue.clone(),
            payload: b"{\"handed back\": true}".to_vec(),
        }])
        .await?;
    let mut deliveries = broker.consume(&queue, "chaos-poison", 1).await?;
    let mut handed_back = 0u32;
    let mut check = tokio::time::interval(Duration::from_millis(200));
    let kept = async {
        loop {
            tokio::select! {
                Some(d) = futures_util::StreamExt::next(&mut deliveries) => {
                    d?.nack(tasker_broker::BasicNackOptions { requeue: true, ..Default::default() })
                        .await?;
                    handed_back += 1;
                }
                _ = check.tick() => {
                    let page = cluster.client(0).dead_letters(None, Some(50)).await?;
                    if let Some(d) = page.dead_letters.iter().find(|d| d.queue.as_deref() == Some(queue.as_str())) {
                        return anyhow::Ok(d.clone());
                    }
                }
            }
        }
    };
    let dead = tokio::time::timeout(Duration::from_secs(60), kept)
        .await
        .context("the message never reached the dead letters")??;
    note(&format!(
        "handed back {handed_back} times, then dead-lettered: {}",
        dead.reason
    ));
    anyhow::ensure!(
        (tasker_broker::DELIVERY_LIMIT as u32..=tasker_broker::DELIVERY_LIMIT as u32 + 1)
            .contains(&handed_back),
        "dead-lettered after {handed_back} deliveries"
    );
    broker.close().await;
    pool.close().await;
    cluster.shutdown().await?;
    services_out(&["cluster-stop"]).await?;
    Ok(())
}

/// Waits until each of `queues` has at least its number of consumers, as cluster node
/// `node` sees them, for at most `window`; fails naming the queues still short.
async fn consumers_back(
    node: &str,
    queues: &[(&str, usize)],
    window: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + window;
    loop {
        let listed = services_out(&["cluster-ctl", node, "list_queues", "name", "consumers"])
            .await
            .unwrap_or_default();
        let short: Vec<String> = queues
            .iter()
            .filter(|(q, want)| {
                let have = listed
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .find(|(name, _)| name == q)
                    .and_then(|(_, n)| n.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                have < *want
            })
            .map(|(q, want)| format!("{q} (wants {want})"))
            .collect();
        if short.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no consumer back on {} within {window:?} after the node was lost: {listed}",
            short.join(", ")
        );
        // Polling rabbitmqctl: the broker offers no notification of a consumer's arrival.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
