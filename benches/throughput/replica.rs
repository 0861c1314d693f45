//! Reads off the primary (`TASKER_BENCH_FILTER=replica`; docs/scaling.md): `linear_rust` offered
//! a steady 200 tasks/s (800 steps/s) open loop, four times — alone; beside dashboards polling
//! 50 task lists a second (`GET /v1/tasks?limit=50`) on the orchestrator that reads the primary;
//! beside the same polling on a second orchestrator whose `database.read_url` is the local
//! streaming replica (`cargo-make/services.sh replica-start`); alone again. Each window reports
//! the primary PostgreSQL's CPU seconds per 1,000 steps (its postmaster and every child, the
//! replica's WAL sender included, from `/proc`; over the warm-up and the measured window, per
//! step of the measured window: alike in all four; the tables vacuumed before the first), the
//! lists answered, and the load's latencies. Both orchestrators and the replica run in every
//! window.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use tasker_client::{Client, TaskQuery};

use super::{Process, Stack, Tasks, Window, env_for, free_port, open_loop, print_level};

const RATE: f64 = 200.0;
const LISTS_PER_S: u64 = 50;

pub(crate) async fn run(stack: &Arc<Stack>) -> Value {
    match measure(stack).await {
        Ok(v) => v,
        Err(e) => {
            println!("replica: failed ({e:#})");
            json!({ "failed": format!("{e:#}") })
        }
    }
}

async fn measure(stack: &Arc<Stack>) -> anyhow::Result<Value> {
    let measured = windows(stack).await;
    tasker::stop_local_replica()?;
    measured
}

async fn windows(stack: &Arc<Stack>) -> anyhow::Result<Value> {
    let replica = tasker::local_replica_url(&stack.env.config.database_url)?;
    let port = free_port()?;
    let mut command = tokio::process::Command::new(super::workspace_binary("tasker-orchestrator")?);
    command.arg("--bind").arg(format!("127.0.0.1:{port}"));
    env_for(&mut command, &stack.env);
    command.env("TASKER_DATABASE__READ_URL", &replica);
    let second = Process::start(
        command,
        "the orchestrator reading the replica",
        "tasker-orchestrator listening",
    )
    .await?;
    let on_replica = Client::new(&format!("http://127.0.0.1:{port}"));
    let postmaster = postmaster(&stack.env.config.database_url).await?;
    let linear = Tasks::linear_rust(stack);
    let w = Window {
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(8),
    };
    let mut out = serde_json::Map::new();
    // Settled tables first (what came before leaves work for autovacuum), and the load alone
    // last too: the windows are compared with both.
    let db = sqlx::PgPool::connect(&stack.env.config.database_url).await?;
    sqlx::query("VACUUM (ANALYZE) tasks, steps, step_edges, transitions")
        .execute(&db)
        .await?;
    db.close().await;
    for (label, lists) in [
        ("load alone", None),
        ("lists on the primary", Some(stack.client.clone())),
        ("lists on the replica", Some(on_replica)),
        ("load alone again", None),
    ] {
        let answered = Arc::new(AtomicUsize::new(0));
        let stop = tokio_util::sync::CancellationToken::new();
        if let Some(client) = lists {
            tokio::spawn(poll(client, answered.clone(), stop.clone()));
        }
        let before = cpu_seconds(postmaster);
        let level = open_loop(&linear, RATE, w).await;
        let cpu = cpu_seconds(postmaster) - before;
        stop.cancel();
        let steps = (level.tasks * 4).max(1) as f64;
        let per_1k = cpu / steps * 1000.0;
        print_level(&format!("linear_rust {RATE}/s, {label}"), &level);
        let lists = answered.load(Ordering::Relaxed);
        println!(
            "  primary PostgreSQL: {per_1k:.3} CPU-s per 1,000 steps; lists answered: {lists}"
        );
        out.insert(
            label.into(),
            json!({ "level": level, "primary_cpu_s_per_1000_steps": per_1k, "lists": lists }),
        );
    }
    second.stop().await;
    Ok(json!({ "rate_tasks_per_s": RATE, "lists_per_s": LISTS_PER_S, "windows": out }))
}

/// `GET /v1/tasks?limit=50`, [`LISTS_PER_S`] a second, until `stop`.
async fn poll(
    client: Client,
    answered: Arc<AtomicUsize>,
    stop: tokio_util::sync::CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / LISTS_PER_S));
    let q = TaskQuery {
        limit: Some(50),
        ..TaskQuery::default()
    };
    while !stop.is_cancelled() {
        tick.tick().await;
        let (client, q, answered) = (client.clone(), q.clone(), answered.clone());
        tokio::spawn(async move {
            if client.tasks(&q).await.is_ok() {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// The primary's postmaster pid (the first line of its `postmaster.pid`).
async fn postmaster(database_url: &str) -> anyhow::Result<u32> {
    let db = sqlx::PgPool::connect(database_url).await?;
    let dir: String = sqlx::query_scalar("SHOW data_directory")
        .fetch_one(&db)
        .await?;
    db.close().await;
    let text = std::fs::read_to_string(format!("{dir}/postmaster.pid"))?;
    Ok(text.lines().next().unwrap_or_default().trim().parse()?)
}

/// CPU seconds (user + system) of `postmaster` and its children so far.
fn cpu_seconds(postmaster: u32) -> f64 {
    let hz = 100.0; // USER_HZ on Linux
    let mut ticks = 0u64;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let pid: u32 = entry.file_name().to_string_lossy().parse().unwrap_or(0);
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ppid: u32 = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
        if pid == postmaster || ppid == postmaster {
            let field = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            ticks += field(11) + field(12);
        }
    }
    ticks as f64 / hz
}
