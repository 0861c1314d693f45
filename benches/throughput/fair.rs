//! Fair sharing under load, on the benchmark's stack (`TASKER_BENCH_FILTER=fair`):
//! - **priority**: how long the first step of a high-priority `linear` task takes to start (its
//!   task's creation to the step's start at the worker) when idle, then behind a backlog of
//!   `TASKER_FAIR_BACKLOG` (5,000) low-priority `slow_chain` tasks (100 ms steps), with a
//!   low-priority probe beside it (what the backlog costs a task without priority); and how
//!   long the backlog takes to finish (aging: low work is not starved). Twice: with the
//!   worker's defaults (it holds more steps than it runs, so a high step waits for a running
//!   one to end), and again with its prefetch at half its concurrency (slots to spare: the
//!   floor of the lanes themselves);
//! - **concurrency**: 20 `metered` tasks (a limit of 2 per customer) for customer A, then 20 for
//!   B: the most steps of one customer that ever overlapped, and each customer's time to finish;
//! - **rate**: 100 `rated` tasks (`limit: 100, per: 1s, burst: 20`) created while their key is
//!   paused: none may start before the pause's end, then the first to last start.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use tasker_client::{CreateTask, Priority, Step};

use super::{Stack, percentile};

/// Creation to the start of the task's first step, in milliseconds, once it finished; and the
/// part of it from the step's dispatch (its commit) to its start at the worker.
async fn first_start_ms(stack: &Stack, id: Uuid) -> anyhow::Result<(f64, f64)> {
    let state = stack.done.wait(id, Duration::from_secs(300)).await?;
    anyhow::ensure!(state == "complete", "task {id} ended {state}");
    let task = stack.client.task(id, None).await?;
    let steps = stack.client.steps(id).await?;
    let first = steps
        .iter()
        .filter(|s| s.started_at.is_some())
        .min_by_key(|s| s.started_at)
        .ok_or_else(|| anyhow::anyhow!("task {id}: no step started"))?;
    let ms = |a: DateTime<Utc>, b: DateTime<Utc>| {
        (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0
    };
    let started = first.started_at.unwrap_or(task.created_at);
    Ok((
        ms(task.created_at, started),
        ms(first.dispatched_at.unwrap_or(task.created_at), started),
    ))
}

async fn create(stack: &Stack, name: &str, context: Value, p: Priority) -> anyhow::Result<Uuid> {
    Ok(stack
        .client
        .create_task(
            &CreateTask::new("rust_examples", name)
                .context(context)
                .priority(p),
        )
        .await?
        .id)
}

fn spread(mut ms: Vec<f64>) -> Value {
    ms.sort_by(f64::total_cmp);
    let d: Vec<Duration> = ms
        .iter()
        .map(|m| Duration::from_secs_f64(m / 1000.0))
        .collect();
    json!({"n": ms.len(), "p50_ms": percentile(&d, 0.5), "p95_ms": percentile(&d, 0.95),
           "max_ms": ms.last().copied().unwrap_or(0.0)})
}

async fn priority(stack: &Stack, label: &str) -> anyhow::Result<Value> {
    let backlog: usize = std::env::var("TASKER_FAIR_BACKLOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000);
    let probe = || json!({"value": 6});
    let (mut idle, mut idle_sent) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let id = create(stack, "linear", probe(), Priority::High).await?;
        let (start, sent) = first_start_ms(stack, id).await?;
        idle.push(start);
        idle_sent.push(sent);
    }
    // The backlog, created by 32 clients at once, faster than the worker drains it.
    let started = std::time::Instant::now();
    let mut creators = Vec::new();
    let per = backlog.div_ceil(32);
    for c in 0..32 {
        let client = stack.client.clone();
        let n = per.min(backlog.saturating_sub(c * per));
        creators.push(tokio::spawn(async move {
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                let req = CreateTask::new("rust_examples", "slow_chain")
                    .context(json!({"sleep_ms": 100}))
                    .priority(Priority::Low);
                ids.push(client.create_task(&req).await?.id);
            }
            anyhow::Ok(ids)
        }));
    }
    let mut low = Vec::with_capacity(backlog);
    for c in creators {
        low.extend(c.await??);
    }
    let created_s = started.elapsed().as_secs_f64();
    // Probes behind the backlog, 50 ms apart: high priority, and a low one for comparison.
    let (mut high, mut high_sent) = (Vec::new(), Vec::new());
    let mut probes = Vec::new();
    for _ in 0..20 {
        probes.push(create(stack, "linear", probe(), Priority::High).await?);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let low_probe = create(stack, "linear", probe(), Priority::Low).await?;
    for id in probes {
        let (start, sent) = first_start_ms(stack, id).await?;
        high.push(start);
        high_sent.push(sent);
    }
    let low_probe_ms = first_start_ms(stack, low_probe).await?.0;
    for id in &low {
        let state = stack.done.wait(*id, Duration::from_secs(600)).await?;
        anyhow::ensure!(state == "complete", "backlog task {id} ended {state}");
    }
    let drained_s = started.elapsed().as_secs_f64();
    let (idle, high) = (spread(idle), spread(high));
    let (idle_sent, high_sent) = (spread(idle_sent), spread(high_sent));
    let ratio = high["p50_ms"].as_f64().unwrap_or(0.0) / idle["p50_ms"].as_f64().unwrap_or(1.0);
    println!(
        "priority ({label}): first step of a high task idle p50 {:.2} ms p95 {:.2}; behind {backlog} low \
         tasks p50 {:.2} ms p95 {:.2} ({ratio:.2}x idle); a low probe {low_probe_ms:.0} ms; \
         backlog created in {created_s:.1} s, all done in {drained_s:.1} s; of which dispatch to \
         start p50 {:.2} ms idle, {:.2} ms behind the backlog",
        idle["p50_ms"].as_f64().unwrap_or(0.0),
        idle["p95_ms"].as_f64().unwrap_or(0.0),
        high["p50_ms"].as_f64().unwrap_or(0.0),
        high["p95_ms"].as_f64().unwrap_or(0.0),
        idle_sent["p50_ms"].as_f64().unwrap_or(0.0),
        high_sent["p50_ms"].as_f64().unwrap_or(0.0),
    );
    Ok(
        json!({"backlog": backlog, "idle_first_start": idle, "behind_backlog_first_start": high,
              "ratio_p50": ratio, "idle_dispatch_to_start": idle_sent,
              "behind_backlog_dispatch_to_start": high_sent, "low_probe_first_start_ms": low_probe_ms,
              "backlog_created_s": created_s, "backlog_all_done_s": drained_s}),
    )
}

/// The most of `steps` whose [started, finished] overlapped at once.
fn most_at_once(steps: &[Step]) -> i32 {
    let mut edges: Vec<(DateTime<Utc>, i32)> = steps
        .iter()
        .filter_map(|s| Some([(s.started_at?, 1), (s.finished_at?, -1)]))
        .flatten()
        .collect();
    edges.sort();
    edges
        .iter()
        .scan(0, |now, (_, d)| {
            *now += d;
            Some(*now)
        })
        .max()
        .unwrap_or(0)
}

async fn concurrency(stack: &Stack) -> anyhow::Result<Value> {
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for customer in ["A", "B"] {
        for _ in 0..20 {
            let ctx = json!({"customer": customer, "sleep_ms": 20});
            tasks.push((
                customer,
                create(stack, "metered", ctx, Priority::Normal).await?,
            ));
        }
    }
    let mut out = serde_json::Map::new();
    for customer in ["A", "B"] {
        let mut steps = Vec::new();
        let mut finished = 0.0f64;
        for (_, id) in tasks.iter().filter(|(c, _)| *c == customer) {
            let state = stack.done.wait(*id, Duration::from_secs(120)).await?;
            anyhow::ensure!(state == "complete", "task {id} ended {state}");
            finished = finished.max(started.elapsed().as_secs_f64());
            steps.extend(stack.client.steps(*id).await?);
        }
        let counted = steps
            .iter()
            .filter_map(|s| s.result.as_ref()?["running"].as_u64())
            .max()
            .unwrap_or(0);
        out.insert(
            customer.to_owned(),
            json!({"finished_s": finished, "most_overlapping": most_at_once(&steps),
                   "most_counted_by_handlers": counted}),
        );
    }
    let ratio = out["B"]["finished_s"].as_f64().unwrap_or(0.0)
        / out["A"]["finished_s"].as_f64().unwrap_or(1.0);
    println!(
        "concurrency (limit 2 per customer, 20 tasks each): A {} / B {} (B finished in {ratio:.2}x A's time)",
        out["A"], out["B"]
    );
    out.insert("b_over_a".into(), json!(ratio));
    Ok(Value::Object(out))
}

async fn rate(stack: &Stack) -> anyhow::Result<Value> {
    // The key exists once a step claimed it; then it is paused while 100 tasks are created.
    let first = create(stack, "rated", json!({"sleep_ms": 0}), Priority::Normal).await?;
    stack.done.wait(first, Duration::from_secs(60)).await?;
    let pause_end = Utc::now() + chrono::Duration::seconds(3);
    stack
        .client
        .pause_rate_limit("flow-provider", pause_end, Some("benchmark"))
        .await?;
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(create(stack, "rated", json!({"sleep_ms": 0}), Priority::Normal).await?);
    }
    let mut starts = Vec::new();
    for id in &ids {
        stack.done.wait(*id, Duration::from_secs(60)).await?;
        let steps = stack.client.steps(*id).await?;
        starts.push(steps[0].started_at.expect("started"));
    }
    starts.sort();
    let early = starts.iter().filter(|s| **s < pause_end).count();
    let seconds =
        |a: DateTime<Utc>, b: DateTime<Utc>| (b - a).num_microseconds().unwrap_or(0) as f64 / 1e6;
    let first_to_last = seconds(starts[0], starts[starts.len() - 1]);
    let end_to_last = seconds(pause_end, starts[starts.len() - 1]);
    println!(
        "rate (100/s, burst 20), 100 steps after a pause: first to last start {first_to_last:.3} s, \
         the pause's end to the last start {end_to_last:.3} s (target 0.8 to 1.1), {early} \
         started before the pause's end"
    );
    Ok(json!({"steps": 100, "first_to_last_start_s": first_to_last,
              "pause_end_to_last_start_s": end_to_last, "started_before_pause_end": early}))
}

/// Every part, each on its own (one that fails is reported, the others still run); the Rust
/// worker is restarted with its prefetch at half its concurrency for the second priority run,
/// then with its defaults again.
pub(super) async fn run(stack: &mut Stack) -> Value {
    let mut out = serde_json::Map::new();
    let defaults = priority(stack, "worker defaults").await;
    let half = (stack.env.config.worker.concurrency / 2).max(1).to_string();
    let spare = match stack
        .worker_with("rust", &[("TASKER_WORKER__PREFETCH", half.as_str())])
        .await
    {
        Ok(()) => priority(stack, "prefetch half the concurrency").await,
        Err(e) => Err(e),
    };
    let back = stack.worker("rust").await;
    if let Err(e) = back {
        out.insert("worker_restart_failed".into(), json!(format!("{e:#}")));
    }
    for (name, part) in [
        ("priority", defaults),
        ("priority_with_spare_slots", spare),
        ("concurrency", concurrency(stack).await),
        ("rate", rate(stack).await),
    ] {
        out.insert(
            name.into(),
            part.unwrap_or_else(|e| {
                println!("fair sharing, {name}: FAILED {e:#}");
                json!({"failed": format!("{e:#}")})
            }),
        );
    }
    Value::Object(out)
}
