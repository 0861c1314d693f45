//! Operations by filter at scale (`TASKER_BENCH_FILTER=operations`): `TASKER_OPS_TASKS`
//! (100,000) copies of one failed `repairable` task, then
//! - the **dry run**'s exact count, three times (each request's time);
//! - a **retry** of them all, timed from its request to the operation's end, with the
//!   orchestrator killed (SIGKILL) once a third of them were acted on and started again: the
//!   operation goes on after its lease (10 s) runs out; every task must be acted on exactly
//!   once (counted in the history);
//! - a **cancel** of them all (now running), timed the same way without a kill.
//!
//! The Rust worker is stopped first and the steps the retry sent are purged from its queue
//! afterwards, so the figures are the operations' own, not the workers'.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

use tasker_client::{CreateTask, OperationFilter, StartOperation};

use super::{Process, Stack, env_for, workspace_binary};

fn request(action: &str) -> StartOperation {
    StartOperation {
        action: action.into(),
        filter: OperationFilter {
            name: Some("repairable".into()),
            ..OperationFilter::default()
        },
        reason: Some("bench".into()),
        by: None,
        result: None,
        dry_run: false,
    }
}

/// The failed copies: one task failed for real, copied `n` times in SQL.
async fn failed_copies(stack: &Stack, n: i64) -> anyhow::Result<()> {
    let source = stack
        .client
        .create_task(
            &CreateTask::new("rust_examples", "repairable")
                .context(json!({"value": 1, "succeed_on_attempt": 3})),
        )
        .await?
        .id;
    let state = stack.done.wait(source, Duration::from_secs(60)).await?;
    anyhow::ensure!(state == "error", "the source task ended {state}");
    tasker::copy_finished_task(
        &stack.env.config.database_url,
        source,
        n,
        chrono::Duration::hours(1),
    )
    .await?;
    let db = sqlx::PgPool::connect(&stack.env.config.database_url).await?;
    sqlx::query("VACUUM (ANALYZE) tasks, steps, step_edges, transitions")
        .execute(&db)
        .await?;
    db.close().await;
    Ok(())
}

/// Kills the orchestrator (SIGKILL) and starts another on the same address.
async fn kill_and_restart(stack: &mut Stack) -> anyhow::Result<()> {
    let port = stack.url.rsplit(':').next().unwrap_or_default().to_owned();
    let mut command = tokio::process::Command::new(workspace_binary("tasker-orchestrator")?);
    command
        .arg("--bind")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--templates")
        .arg(tasker::repo_root().join("tests/fixtures/task_templates"));
    env_for(&mut command, &stack.env);
    stack.orchestrator.child.kill().await?;
    stack.orchestrator =
        Process::start(command, "the orchestrator", "tasker-orchestrator listening").await?;
    Ok(())
}

/// Runs `action` on every copy: the request's time, the operation's time to its end, and the
/// operation as it ended. With `kill`, the orchestrator is killed a third of the way.
async fn run_op(stack: &mut Stack, action: &str, kill: bool) -> anyhow::Result<Value> {
    let started = Instant::now();
    let op = stack.client.start_operation(&request(action)).await?;
    let request_s = started.elapsed().as_secs_f64();
    let mut killed_at = None;
    let done = loop {
        let now = stack.client.operation(op.id).await;
        if let Ok(now) = &now {
            if now.is_finished() {
                break now.clone();
            }
            if kill && killed_at.is_none() && now.acted * 3 >= now.matched {
                killed_at = Some((now.acted, started.elapsed().as_secs_f64()));
                kill_and_restart(stack).await?;
            }
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(600),
            "operation {} not finished in 10 min",
            op.id
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let total_s = started.elapsed().as_secs_f64();
    let twice = acted_twice(stack, op.id).await?;
    let (batches, batch_s) = batch_times(stack).await;
    println!(
        "operation {action} of {}: request {request_s:.2} s, ended {} in {total_s:.1} s ({:.0} tasks/s), acted {}, skipped {}, killed at {killed_at:?}, tasks acted on twice: {twice}; {batches} batches of the last orchestrator took {batch_s:.1} s in the database",
        op.matched,
        done.state,
        done.acted as f64 / total_s,
        done.acted,
        done.skipped
    );
    Ok(json!({
        "action": action, "matched": op.matched, "state": done.state, "acted": done.acted,
        "skipped": done.skipped, "request_s": request_s, "total_s": total_s,
        "tasks_per_s": done.acted as f64 / total_s,
        "killed_after_acted": killed_at.map(|k| k.0), "killed_at_s": killed_at.map(|k| k.1),
        "acted_twice": twice, "batches": batches, "batches_s": batch_s,
    }))
}

/// The batches the orchestrator now running has done, and their time in all (its
/// `tasker_operation_batch_seconds`).
async fn batch_times(stack: &Stack) -> (f64, f64) {
    let page = match reqwest::get(format!("{}/metrics", stack.url)).await {
        Ok(resp) => resp.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let read = |series: &str| tasker::scrape::sample(&page, series).unwrap_or(f64::NAN);
    (
        read("tasker_operation_batch_seconds_count"),
        read("tasker_operation_batch_seconds_sum"),
    )
}

/// Tasks whose history names operation `op` more than once at the task's level.
async fn acted_twice(stack: &Stack, op: Uuid) -> anyhow::Result<i64> {
    let db = sqlx::PgPool::connect(&stack.env.config.database_url).await?;
    let twice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT task_id FROM transitions
                               WHERE step_id IS NULL AND reason LIKE '%operation ' || $1 || '%'
                               GROUP BY task_id HAVING count(*) > 1) t",
    )
    .bind(op.to_string())
    .fetch_one(&db)
    .await?;
    db.close().await;
    Ok(twice)
}

/// Empties the Rust namespace's steps queue (what the retry sent while no worker ran).
async fn purge_steps(stack: &Stack) -> anyhow::Result<()> {
    let c = &stack.env.config;
    let broker = tasker_broker::Broker::connect_with(
        &c.amqp_url,
        &c.queue_prefix,
        "bench-operations",
        c.tls_ca_file.as_deref(),
    )
    .await?;
    let channel = broker.channel().await?;
    let queue = tasker_broker::topology::steps_queue(&c.queue_prefix, "rust_examples");
    channel
        .queue_purge(queue.as_str().into(), Default::default())
        .await?;
    broker.close().await;
    Ok(())
}

async fn measure(stack: &mut Stack) -> anyhow::Result<Value> {
    let n: i64 = std::env::var("TASKER_OPS_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    failed_copies(stack, n).await?;
    if let Some((worker, _)) = stack.workers.remove("rust") {
        worker.stop().await;
    }
    let mut dry = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let count = stack.client.count_operation(&request("retry")).await?;
        dry.push(started.elapsed().as_secs_f64());
        anyhow::ensure!(
            count.matched == n as u64 + 1,
            "dry run matched {}",
            count.matched
        );
    }
    dry.sort_by(f64::total_cmp);
    println!(
        "operation dry run of {}: {:.3} s median ({dry:?})",
        n + 1,
        dry[1]
    );
    let retry = run_op(stack, "retry", true).await?;
    let cancel = run_op(stack, "cancel", false).await?;
    purge_steps(stack).await?;
    stack.worker("rust").await?;
    Ok(json!({"tasks": n + 1, "dry_run_s": dry, "retry": retry, "cancel": cancel}))
}

/// The whole part; a failure is reported, not fatal to the run.
pub(super) async fn run(stack: &mut Stack) -> Value {
    measure(stack)
        .await
        .unwrap_or_else(|e| json!({"failed": format!("{e:#}")}))
}
