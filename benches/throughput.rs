//! Throughput of Tasker under load, on real PostgreSQL and RabbitMQ, with the orchestrator and
//! the workers as separate processes (the release binaries; `cargo make bench-throughput`
//! builds them first).
//!
//! For each scenario (linear 4 steps, diamond, a 100-way fan-out on the Rust worker, linear on
//! the Python worker):
//! - **closed loop**: `C` clients each create a task through the REST API and wait for its
//!   completion, again and again, for each concurrency `C` of `TASKER_THROUGHPUT_CONCURRENCY`
//!   (default `1,8,32,64,128`); the best level is *saturation*;
//! - **open loop**: tasks offered at a steady 25/50/75% of the saturated rate, each timed from
//!   its create request to its completion;
//! - the **batch sizes** formed at each hop in that time (results per transaction, messages
//!   per publish round, messages per consume, results per confirm round, steps per FFI call),
//!   read from the processes' Prometheus histograms.
//!
//! Completion is the orchestrator's `pg_notify` (one LISTEN connection for the whole
//! generator), never a poll. The generator is one Rust process over `tasker-client`; it never
//! waits on itself (each client is a tokio task, the pacer spawns one per offered task).
//!
//! Beside them, in the same run:
//! - a **floor**: the same hops per step (a durable commit, a confirmed publish, a consume, a
//!   confirmed publish back, a consume, a durable commit) with commits and confirms pipelined
//!   and batched as far as they go — the most this machine allows for 4-step chains — driven
//!   closed- and open-loop like the scenarios, so each figure has the floor's beside it;
//! - a **peer**: a 4-task Celery chain over the same RabbitMQ (`benches/peers/celery_chain.py`,
//!   run with `TASKER_CELERY_PYTHON`, which the cargo-make task sets up in a throwaway venv),
//!   and `linear_rust` once more, open loop at the rate the peer was offered at 50% of its
//!   saturation, to compare latencies at one load;
//! - **scale**: one 100,000-step fan-out, timed end to end, with the peak resident memory of the
//!   orchestrator and the worker sampled while it runs;
//! - **the polyglot pipeline** (`polyglot/pipeline`: TypeScript → Rust → Python → Ruby →
//!   TypeScript, one task per batch of events): `TASKER_PIPELINE_EVENTS` (100,000) events at each
//!   batch size of `TASKER_PIPELINE_BATCHES` (1,10,100,1000), 256 tasks in flight, the aggregates
//!   compared with the oracle (`tasker::pipeline`), events/s end to end beside the oracle's own
//!   in-process rate, each stage's time at the worker (hand-out to outcome) and in the queue, and
//!   the CPU seconds each process (PostgreSQL, RabbitMQ, orchestrator, workers) used in the run;
//! - **fair sharing** (`fair`): a high-priority task's first step behind a low-priority backlog
//!   against idle, a concurrency limit per customer, a rate limit after a pause
//!   (`throughput/fair.rs`);
//! - **operations by filter** (`operations`): a dry run's count, a retry of 100,000 failed tasks
//!   across a SIGKILL of the orchestrator, and a cancel of them (`throughput/operations.rs`);
//! - **scale** (`scale`): 10,000 tasks in one bulk request, and the latency of a 1,000 steps/s
//!   load while 100,000 old finished tasks are purged (`throughput/scale.rs`);
//! - **events** (`events`): 10,000 events in one batch, each starting a task through a trigger,
//!   beside the same tasks created in one bulk request (`throughput/events.rs`);
//! - **a dead alert sink** (`dead_sink`): the `linear` chain at 1 and 8 clients with no alert
//!   rule, with 200 firing rules whose sink answers, with the same rules sending to a sink that
//!   never answers, and after (`throughput/dead_sink.rs`).
//! - **reads off the primary** (`replica`): the primary's CPU per step under a steady load, alone
//!   and beside 50 task lists a second read from the primary or from a streaming replica
//!   (`throughput/replica.rs`);
//! - **step streams** (`streams`): one broker hop at idle (the floor), a Rust step's 1,000
//!   chunks from emission to a reader of its stream, and 1,000 readers of one stream beside the
//!   `linear` chain (`throughput/streams.rs`).
//!
//! Figures go to stdout and `target/throughput/summary.json`; `cargo make bench-report` turns them
//! into `docs/benchmarks/throughput.md`. `TASKER_BENCH_FILTER=linear_rust` runs only matching
//! scenarios (several, comma-separated: `floor,linear_rust,fanout_100k,celery`); `TASKER_THROUGHPUT_SECONDS` sets the measured time per level (default 5);
//! `TASKER_THROUGHPUT_RATES=200,400` also offers those fixed rates (tasks/s) in open loop, printed
//! only, to compare two builds at the same load.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use uuid::Uuid;

use tasker::{TestEnv, repo_root, target_dir, templates, workspace_binary, write_bench_summary};

#[path = "throughput/batch_sizes.rs"]
mod batch_sizes;
#[path = "throughput/completions.rs"]
mod completions;
#[path = "throughput/dead_sink.rs"]
mod dead_sink;
#[path = "throughput/events.rs"]
mod events;
#[path = "throughput/fair.rs"]
mod fair;
#[path = "throughput/floor.rs"]
mod floor;
#[path = "throughput/load.rs"]
mod load;
#[path = "throughput/operations.rs"]
mod operations;
#[path = "throughput/pipeline.rs"]
mod pipeline;
#[path = "throughput/processes.rs"]
mod processes;
#[path = "throughput/replica.rs"]
mod replica;
#[path = "throughput/scale.rs"]
mod scale;
#[path = "throughput/streams.rs"]
mod streams;
use batch_sizes::*;
use completions::*;
use floor::*;
use load::*;
use pipeline::*;
use processes::*;
use tasker_broker::{BasicAckOptions, Broker, Outgoing, next_batch, topology};
use tasker_client::{Client, CreateTask};

// ---------------------------------------------------------------------------------------------
// Scale: one 100,000-step fan-out

async fn fan_out(stack: &Stack, batches: u64) -> anyhow::Result<Value> {
    let sample = |p: &Process| p.memory().map(|(rss, _)| rss).unwrap_or(0);
    let (before_o, before_w) = (
        sample(&stack.orchestrator),
        sample(&stack.workers["rust"].0),
    );
    let started = Instant::now();
    let task = stack
        .client
        .create_task(
            &CreateTask::new("rust_examples", "batch_numbers")
                .context(json!({"count": batches, "batch_size": 1})),
        )
        .await?;
    let (mut peak_o, mut peak_w) = (before_o, before_w);
    let wait = stack.done.wait(task.id, Duration::from_secs(600));
    tokio::pin!(wait);
    let mut every = tokio::time::interval(Duration::from_millis(50));
    let state = loop {
        tokio::select! {
            s = &mut wait => break s?,
            _ = every.tick() => {
                peak_o = peak_o.max(sample(&stack.orchestrator));
                peak_w = peak_w.max(sample(&stack.workers["rust"].0));
            }
        }
    };
    let elapsed = started.elapsed();
    anyhow::ensure!(state == "complete", "the fan-out ended {state}");
    let total = stack.client.task(task.id, None).await?;
    let expected: u64 = (0..batches).sum();
    let result = total.result.as_ref().map(|r| r.to_string());
    Ok(json!({
        "steps": batches + 2,
        "seconds": elapsed.as_secs_f64(),
        "steps_per_s": (batches + 2) as f64 / elapsed.as_secs_f64(),
        "orchestrator_rss_before_mib": mib(before_o),
        "orchestrator_peak_rss_mib": mib(peak_o),
        "worker_rss_before_mib": mib(before_w),
        "worker_peak_rss_mib": mib(peak_w),
        "expected_sum": expected,
        "result": result,
    }))
}

// ---------------------------------------------------------------------------------------------
// The peer

/// Runs the Celery chain peer if `TASKER_CELERY_PYTHON` names a Python with Celery.
async fn celery(env: &TestEnv, concurrency: &[usize], seconds: u64) -> Value {
    let Ok(python) = std::env::var("TASKER_CELERY_PYTHON") else {
        return json!({"skipped": "TASKER_CELERY_PYTHON is not set (cargo make bench-throughput sets it)"});
    };
    let out = target_dir().join("throughput/celery.json");
    let list: Vec<String> = concurrency.iter().map(ToString::to_string).collect();
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let status = Command::new(python)
        .arg(repo_root().join("benches/peers/celery_chain.py"))
        .arg("--amqp-url")
        .arg(&env.config.amqp_url)
        .arg("--concurrency")
        .arg(list.join(","))
        .arg("--duration")
        .arg(seconds.to_string())
        .arg("--out")
        .arg(&out)
        .status()
        .await;
    match status {
        Ok(s) if s.success() => std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({"skipped": "the peer wrote no figures"})),
        Ok(s) => json!({"skipped": format!("the peer failed ({s})")}),
        Err(e) => json!({"skipped": format!("the peer could not start: {e}")}),
    }
}

// ---------------------------------------------------------------------------------------------

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn print_level(label: &str, l: &Level) {
    println!(
        "{:<34} {:>7} {:>9.1} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>6}",
        label, l.tasks, l.tasks_per_s, l.steps_per_s, l.p50_ms, l.p95_ms, l.p99_ms, l.errors
    );
}

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let filter = std::env::var("TASKER_BENCH_FILTER").unwrap_or_default();
    // Several parts: `TASKER_BENCH_FILTER=floor,linear_rust,fanout_100k,celery`.
    let wanted = |name: &str| {
        filter.is_empty()
            || filter
                .split(',')
                .any(|f| !f.is_empty() && name.contains(f.trim()))
    };
    let seconds: u64 = std::env::var("TASKER_THROUGHPUT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let w = Window {
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(seconds),
    };
    let levels = env_list("TASKER_THROUGHPUT_CONCURRENCY", "1,8,32,64,128");
    let fractions = [0.25, 0.5, 0.75];
    let fan_out_steps: u64 = std::env::var("TASKER_FANOUT_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);

    let mut stack = Stack::start().await?;
    let mut notes = Vec::new();
    let mut summary_fair = None;
    let scenarios = vec![
        scenario("linear_rust", "rust", "linear", json!({"value": 6}), 4),
        scenario("diamond_rust", "rust", "diamond", json!({"value": 3}), 4),
        scenario(
            "fanout_100_rust",
            "rust",
            "batch_numbers",
            json!({"count": 100, "batch_size": 1}),
            102,
        ),
        scenario("linear_python", "python", "linear", json!({"value": 6}), 4),
    ];
    let python = scenarios
        .iter()
        .any(|s| s.worker == "python" && wanted(s.name))
        || wanted("pipeline")
        || wanted("streams");
    if python && let Err(e) = stack.worker("python").await {
        notes.push(format!("python worker: skipped ({e:#})"));
    }
    // The pipeline's other languages (its Rust stage runs on the Rust worker).
    if wanted("pipeline") {
        for language in ["ruby", "typescript"] {
            if let Err(e) = stack.worker(language).await {
                notes.push(format!("{language} worker: skipped ({e:#})"));
            }
        }
    }
    // Fair sharing restarts the Rust worker with other settings (and back): before the stack is
    // shared.
    if wanted("fair") {
        summary_fair = Some(fair::run(&mut stack).await);
    }
    // Kills and restarts the orchestrator: before the stack is shared too.
    let summary_operations = if wanted("operations") {
        Some(operations::run(&mut stack).await)
    } else {
        None
    };
    let stack = Arc::new(stack);
    println!(
        "{:<34} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9} {:>6}",
        "scenario / load", "tasks", "tasks/s", "steps/s", "p50 ms", "p95 ms", "p99 ms", "errors"
    );
    let mut summary = serde_json::Map::new();

    if wanted("floor") {
        let floor = Arc::new(Floor::start(&stack.env).await?);
        let figures = load_levels(&floor, &levels, &fractions, w).await;
        floor.stop().await;
        summary.insert(
            "floor_4_steps".into(),
            json!({
                "idle_p50_ms": figures.idle_p50(), "closed_loop": figures.closed,
                "open_loop": figures.open, "saturation": figures.saturation,
                "cpu_s_per_1000_steps_at_saturation": figures.cpu_per_1000_steps,
            }),
        );
    }

    // Kept for a level at the Celery chain's own load, once the peer has run.
    let mut linear_rust: Option<Arc<Tasks>> = None;
    for sc in scenarios {
        if !wanted(sc.name) {
            continue;
        }
        if !stack.workers.contains_key(sc.worker) {
            continue;
        }
        let (name, worker, steps) = (sc.name, sc.worker, sc.steps);
        let tasks = Arc::new(Tasks {
            stack: stack.clone(),
            sc,
        });
        // Warm the path (connections, statement caches) before measuring.
        for _ in 0..10 {
            tasks.one().await?;
        }
        let figures = load_levels(&tasks, &levels, &fractions, w).await;
        summary.insert(
            name.into(),
            json!({
                "worker": worker, "steps_per_task": steps,
                "idle_p50_ms": figures.idle_p50(), "closed_loop": figures.closed,
                "open_loop": figures.open, "saturation": figures.saturation,
                "batch_sizes_at_saturation": figures.batches,
                "cpu_s_per_1000_steps_at_saturation": figures.cpu_per_1000_steps,
            }),
        );
        if name == "linear_rust" {
            linear_rust = Some(tasks);
        }
    }

    if wanted("fanout_100k") {
        match fan_out(&stack, fan_out_steps).await {
            Ok(v) => {
                println!("fan-out of {fan_out_steps}: {v}");
                summary.insert("fanout_100k".into(), v);
            }
            Err(e) => {
                println!("fan-out of {fan_out_steps}: FAILED {e:#}");
                summary.insert("fanout_100k".into(), json!({"failed": format!("{e:#}")}));
            }
        }
    }

    // Before the pipeline, whose tasks carry a thousand events each in their context: the
    // lists of this scenario read the newest tasks.
    if wanted("replica") {
        summary.insert("replica".into(), replica::run(&stack).await);
    }
    if wanted("pipeline") {
        let events = env_list("TASKER_PIPELINE_EVENTS", "100000")[0] as u32;
        let batches = env_list("TASKER_PIPELINE_BATCHES", "1,10,100,1000");
        // The oracle's own rate: the same events and aggregates in this one process.
        let t = Instant::now();
        let oracle = tasker::pipeline::oracle(42, 10_000, 0, events);
        let oracle_rate = f64::from(events) / t.elapsed().as_secs_f64();
        println!(
            "pipeline oracle: {events} events, {} rows, {oracle_rate:.0} events/s in process ({SEED_FIGURES})",
            oracle.len()
        );
        let pool = PgPool::connect(&stack.env.config.database_url).await?;
        let mut runs = Vec::new();
        for batch in batches {
            match pipeline(&stack, &pool, events, batch as u32, 256).await {
                Ok(v) => {
                    println!(
                        "pipeline batch {batch:>5}: {:>9.0} events/s, {:.2} s, equal to the oracle: {}, stages {}, cpu s {}",
                        v["events_per_s"].as_f64().unwrap_or(0.0),
                        v["seconds"].as_f64().unwrap_or(0.0),
                        v["equal_to_oracle"],
                        v["stages"],
                        v["cpu_seconds"]
                    );
                    runs.push(v);
                }
                Err(e) => {
                    println!("pipeline batch {batch}: FAILED {e:#}");
                    runs.push(json!({"batch": batch, "failed": format!("{e:#}")}));
                }
            }
        }
        pool.close().await;
        summary.insert(
            "pipeline".into(),
            json!({"events": events, "oracle_events_per_s": oracle_rate, "runs": runs,
                   "reference": SEED_FIGURES}),
        );
    }

    if wanted("scale") {
        summary.insert("scale".into(), scale::run(&stack).await);
    }
    if wanted("events") {
        summary.insert("events".into(), events::run(&stack).await);
    }
    if wanted("dead_sink") {
        summary.insert("dead_sink".into(), dead_sink::run(&stack, w).await);
    }
    if wanted("streams") {
        summary.insert("streams".into(), streams::run(&stack, w).await);
    }

    if let Some(fair) = summary_fair {
        summary.insert("fair_sharing".into(), fair);
    }
    if let Some(operations) = summary_operations {
        summary.insert("operations".into(), operations);
    }

    if wanted("celery") {
        let peer = celery(&stack.env, &levels, seconds).await;
        println!("celery peer: {peer}");
        // Latency compared at one load: `linear_rust` offered the rate the peer was offered at
        // 50% of its own saturation.
        let peer_half = peer["open_loop"].as_array().and_then(|levels| {
            levels
                .iter()
                .find(|l| l["fraction"].as_f64() == Some(0.5))
                .and_then(|l| l["offered_tasks_per_s"].as_f64())
        });
        if let (Some(tasks), Some(rate)) = (&linear_rust, peer_half) {
            let l = open_loop(tasks, rate, w).await;
            print_level(
                &format!("linear_rust  {rate:.1} tasks/s (Celery's 50%)"),
                &l,
            );
            if let Some(Value::Object(s)) = summary.get_mut("linear_rust") {
                s.insert("at_peer_half_rate".into(), json!(l));
            }
        }
        summary.insert("celery_chain_4".into(), peer);
    }
    drop(linear_rust);

    write_bench_summary(
        "throughput",
        json!({"scenarios": summary, "seconds_per_level": seconds}),
        &notes,
    )?;
    let stack =
        Arc::try_unwrap(stack).map_err(|_| anyhow::anyhow!("load tasks still hold the stack"))?;
    stack.stop().await
}

fn scenario(
    name: &'static str,
    worker: &'static str,
    template: &'static str,
    context: Value,
    steps: usize,
) -> Scenario {
    Scenario {
        name,
        worker,
        namespace: format!("{worker}_examples"),
        template,
        context,
        steps,
    }
}
