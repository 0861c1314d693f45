//! Scale on the benchmark's stack (`TASKER_BENCH_FILTER=scale`):
//! - **bulk create**: 10,000 `linear` tasks in one `POST /v1/tasks:batch`, three times: each
//!   request's time, the same request again (every item `existing`), and the time until the last
//!   of its tasks completed;
//! - **purge beside load**: 100,000 finished tasks completed 40 days ago are made (then vacuumed
//!   and checkpointed); `linear_rust` is offered 250 tasks/s (1,000 steps/s) open loop without a
//!   purge, then while the oldest `TASKER_SCALE_PURGE_TASKS` (2,000) of them are purged (`POST
//!   /v1/purge`, one request, at the retention policy's pace, which outlasts the window): p50/p95/
//!   p99 of both windows and the purge's tasks/s and rows/s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use tasker_client::{BatchStatus, CreateTask, PurgeRequest};

use super::{Stack, Tasks, Window, open_loop, print_level};

const BULK: usize = 10_000;
const OLD: i64 = 100_000;

async fn bulk(stack: &Stack, run: usize) -> anyhow::Result<Value> {
    let items: Vec<CreateTask> = (0..BULK)
        .map(|i| {
            CreateTask::new("rust_examples", "linear")
                .context(json!({"value": i % 1000}))
                .idempotency_key(format!("bench-bulk-{run}-{i}"))
        })
        .collect();
    let started = Instant::now();
    let done = stack.client.create_tasks(&items).await?;
    let request_s = started.elapsed().as_secs_f64();
    anyhow::ensure!(done.created == BULK, "created {} of {BULK}", done.created);
    let again = Instant::now();
    let repeat = stack.client.create_tasks(&items).await?;
    let repeat_s = again.elapsed().as_secs_f64();
    anyhow::ensure!(
        repeat
            .results
            .iter()
            .all(|r| r.status == BatchStatus::Existing),
        "the repeat created something"
    );
    for r in &done.results {
        let id = r.task_id.expect("created");
        let state = stack.done.wait(id, Duration::from_secs(300)).await?;
        anyhow::ensure!(state == "complete", "task {id} ended {state}");
    }
    let all_done_s = started.elapsed().as_secs_f64();
    println!(
        "bulk create {BULK}: request {request_s:.3} s, again {repeat_s:.3} s, all complete {all_done_s:.1} s"
    );
    Ok(
        json!({"tasks": BULK, "request_s": request_s, "repeat_s": repeat_s,
              "all_complete_s": all_done_s}),
    )
}

async fn purge_beside_load(stack: &Arc<Stack>) -> anyhow::Result<Value> {
    let linear = Tasks::linear_rust(stack);
    let w = Window {
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(8),
    };
    let rate = 250.0;
    // The old work first: copies of one finished task, completed 40 days ago; then vacuumed
    // and checkpointed, so both windows below see the same tables and neither pays for the
    // copy's own after-effects (autovacuum, a checkpoint).
    let source = stack
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?
        .id;
    stack.done.wait(source, Duration::from_secs(60)).await?;
    tasker::copy_finished_task(
        &stack.env.config.database_url,
        source,
        OLD,
        chrono::Duration::days(40),
    )
    .await?;
    let db = sqlx::PgPool::connect(&stack.env.config.database_url).await?;
    sqlx::query("VACUUM (ANALYZE) tasks, steps, step_edges, transitions")
        .execute(&db)
        .await?;
    sqlx::query("CHECKPOINT").execute(&db).await?;
    db.close().await;
    let quiet = open_loop(&linear, rate, w).await;
    print_level("linear_rust 250 tasks/s, no purge", &quiet);
    let limit: u32 = std::env::var("TASKER_SCALE_PURGE_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let client = stack.client.clone();
    let purging = tokio::spawn(async move {
        let started = Instant::now();
        let purged = client
            .purge(&PurgeRequest {
                older_than: "30d".into(),
                states: None,
                dry_run: false,
                limit: Some(limit),
            })
            .await;
        (purged, started.elapsed())
    });
    let during = open_loop(&linear, rate, w).await;
    print_level("linear_rust 250 tasks/s, purging", &during);
    let (purged, took) = purging.await?;
    let purged = purged?;
    let seconds = took.as_secs_f64();
    let whole_window = took >= w.warmup + w.measure;
    println!(
        "purge: {} tasks, {} rows in {seconds:.2} s ({:.0} tasks/s, {:.0} rows/s); p99 {:.1} -> {:.1} ms",
        purged.tasks,
        purged.rows.unwrap_or(0),
        purged.tasks as f64 / seconds,
        purged.rows.unwrap_or(0) as f64 / seconds,
        quiet.p99_ms,
        during.p99_ms
    );
    Ok(json!({
        "offered_tasks_per_s": rate, "window_s": w.measure.as_secs_f64(),
        "without_purge": quiet, "during_purge": during,
        "purged_tasks": purged.tasks, "purged_rows": purged.rows, "purged_bytes": purged.bytes,
        "purge_s": seconds, "purge_outlasted_window": whole_window,
        "p99_ratio": during.p99_ms / quiet.p99_ms,
    }))
}

/// Both parts; a part that fails is reported as failed, not fatal to the run.
/// `TASKER_SCALE_BULK_RUNS` (3) bulk requests; `TASKER_SCALE_PURGE=0` leaves the purge out.
pub(super) async fn run(stack: &Arc<Stack>) -> Value {
    let runs_wanted: usize = std::env::var("TASKER_SCALE_BULK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut runs = Vec::new();
    for run in 0..runs_wanted {
        runs.push(
            bulk(stack, run)
                .await
                .unwrap_or_else(|e| json!({"failed": format!("{e:#}")})),
        );
    }
    if std::env::var("TASKER_SCALE_PURGE").as_deref() == Ok("0") {
        return json!({"bulk_create": runs});
    }
    let purge = purge_beside_load(stack)
        .await
        .unwrap_or_else(|e| json!({"failed": format!("{e:#}")}));
    json!({"bulk_create": runs, "purge_beside_load": purge})
}
