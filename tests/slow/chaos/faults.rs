//! The fault run: tasks of every conformance scenario in every language across two
//! orchestrators and two workers per language, while workers and orchestrators are SIGKILLed,
//! RabbitMQ and PostgreSQL restart, and duplicate, stale and poison results are injected; then
//! the report, and no task lost, none stuck, no transition applied twice, every result right.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use tokio::process::Command;
use uuid::Uuid;

use tasker::{TestEnv, repo_root};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_shared::{Outcome, StepResult};

use super::{
    Cluster, SERIAL, applied_twice, create, finished, note, received, recovery, run_on_two_workers,
};
use crate::common::{Scenario, free_port, scenarios, start_orchestrator};

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
                    streamed: None,
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
