//! Processes SIGKILLed mid-flight: an orchestrator killed around a child task's start leaves
//! exactly one child; an orchestrator and a worker killed in the middle of work under a
//! concurrency limit lose no task, never let more than the limit run, and leave every slot free;
//! an orchestrator killed in the middle of a fan-out's count-down leaves its convergence step run
//! once, over every batch counted once.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::{TestEnv, steps_by_name};
use tasker_client::CreateTask;

use crate::common;

/// An orchestrator SIGKILLed around the start of a child task leaves exactly one child per
/// step attempt. Before the commit: the child's idempotency key is held by an uncommitted row of
/// this test, so the orchestrator's child insert waits on it; the orchestrator is killed there
/// and its backend ended as PostgreSQL ends a dead client's, so nothing of the child commits;
/// a new orchestrator's sweeper publishes the step again and the child starts once. After the
/// commit: the orchestrator is killed as soon as the child exists; the step, linked to its child,
/// is not started again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_killed_around_a_child_start_leaves_one_child() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let children = |parent: Uuid| {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM tasks WHERE parent_task_id = $1",
                )
                .bind(parent)
                .fetch_one(&db)
                .await?,
            )
        }
    };
    let family =
        || CreateTask::new("rust_examples", "family").context(json!({"value": 1, "sleep_ms": 0}));
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;

    // Before the commit. No worker yet, so `prep` waits and `kid` is not dispatched.
    let parent = a.client.create_task(&family()).await?;
    let kid = steps_by_name(&a.client, parent.id).await?["kid"].id;
    // The child's key, held in its namespace (the parent's: keys are per namespace).
    let mut hold = db.begin().await?;
    sqlx::query(
        "INSERT INTO tasks (id, template_id, namespace, name, version, state, context,
                            idempotency_key, open_steps)
         SELECT $1, template_id, namespace, 'held', '1', 'running', '{}', $3, 0
         FROM tasks WHERE id = $2",
    )
    .bind(Uuid::now_v7())
    .bind(parent.id)
    .bind(format!("child:{kid}:1"))
    .execute(&mut *hold)
    .await?;
    let url = format!("http://127.0.0.1:{}", a.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker", &url).await?;
    // The orchestrator's child insert waits on the held key.
    let waiting = async {
        let mut every = tokio::time::interval(Duration::from_millis(20));
        loop {
            every.tick().await;
            let pid: Option<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND query LIKE '%tasker_create_tasks%'",
            )
            .fetch_optional(&db)
            .await?;
            if let Some(pid) = pid {
                return anyhow::Ok(pid);
            }
        }
    };
    let backend = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .map_err(|_| anyhow::anyhow!("the child's start never reached the held key"))??;
    a.child.kill().await?;
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(backend)
        .execute(&db)
        .await?;
    hold.rollback().await?;
    assert_eq!(
        children(parent.id).await?,
        0,
        "nothing of the child committed"
    );
    let b = common::start_orchestrator(&env, common::free_port()?).await?;
    let done = b.client.wait(parent.id, Duration::from_secs(60)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(children(parent.id).await?, 1, "one child for the attempt");

    // After the commit.
    let mut b = b;
    let second = b.client.create_task(&family()).await?;
    let exists = async {
        let mut every = tokio::time::interval(Duration::from_millis(5));
        loop {
            every.tick().await;
            if children(second.id).await? > 0 {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), exists)
        .await
        .map_err(|_| anyhow::anyhow!("no child started"))??;
    b.child.kill().await?;
    let c = common::start_orchestrator(&env, common::free_port()?).await?;
    let done = c.client.wait(second.id, Duration::from_secs(60)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(children(second.id).await?, 1, "one child for the attempt");
    worker.child.kill().await?;
    let mut c = c;
    c.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

/// Twenty tasks each for customers A and B under a limit of two per customer; an orchestrator
/// and the worker are SIGKILLed once a few have finished (another orchestrator runs on, a new
/// worker starts): all 40 finish, no more than two steps of a customer ever ran at once, every
/// slot is free afterwards and the reconciler finds nothing to correct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_holds_and_frees_every_slot_through_kills() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;
    let b = common::start_orchestrator(&env, common::free_port()?).await?;
    let url = format!("http://127.0.0.1:{}", b.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker-1", &url).await?;
    let mut tasks = Vec::new();
    for (i, customer) in ["A", "B"].iter().cycle().take(40).enumerate() {
        // Half the tasks through each orchestrator.
        let client = if i % 2 == 0 { &a.client } else { &b.client };
        let task = client
            .create_task(
                &CreateTask::new("rust_examples", "metered")
                    .context(json!({"customer": customer, "sleep_ms": 100})),
            )
            .await?;
        tasks.push((*customer, task.id));
    }
    // Midway: a few of each customer's tasks finished.
    for (_, id) in tasks.iter().take(6) {
        let done = b.client.wait(*id, Duration::from_secs(60)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
    }
    a.child.kill().await?;
    worker.child.kill().await?;
    let mut worker = common::start_worker(&env, "rust", "rust-worker-2", &url).await?;
    let mut steps: std::collections::BTreeMap<&str, Vec<tasker_client::Step>> = Default::default();
    for (customer, id) in &tasks {
        let done = b.client.wait(*id, Duration::from_secs(120)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
        for s in b.client.steps(*id).await? {
            let running = s.result.as_ref().and_then(|r| r["running"].as_u64());
            assert!(running.is_some_and(|n| n <= 2), "{customer}: {s:?}");
            steps.entry(customer).or_default().push(s);
        }
    }
    for (customer, s) in &steps {
        let mut edges: Vec<(chrono::DateTime<chrono::Utc>, i32)> = s
            .iter()
            .flat_map(|s| [(s.started_at.unwrap(), 1), (s.finished_at.unwrap(), -1)])
            .collect();
        edges.sort();
        let most = edges
            .iter()
            .scan(0, |n, (_, d)| {
                *n += d;
                Some(*n)
            })
            .max();
        assert!(most.is_some_and(|m| m <= 2), "{customer}: {most:?} at once");
    }
    for l in b.client.concurrency_limits(None).await? {
        assert_eq!((l.in_use, l.throttled), (0, 0), "{l:?}");
    }
    let drift: serde_json::Value = sqlx::query_scalar("SELECT tasker_reconcile_slots()")
        .fetch_one(&db)
        .await?;
    assert_eq!(drift, json!([]), "the reconciler corrected slots");
    worker.child.kill().await?;
    let mut b = b;
    b.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

/// A 4,000-batch fan-out applied by two orchestrators, one SIGKILLed once a quarter of the
/// batches are counted (its result batch in flight rolls back and is delivered to the other):
/// every batch is counted once, the convergence step runs once and sees every batch, and the
/// task completes once with nothing left to count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_killed_mid_fan_out_converges_exactly_once() -> anyhow::Result<()> {
    const N: i64 = 4_000;
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;
    let b = common::start_orchestrator(&env, common::free_port()?).await?;
    let url = format!("http://127.0.0.1:{}", b.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker", &url).await?;
    let task = a
        .client
        .create_task(
            &CreateTask::new("rust_examples", "batch_numbers")
                .context(json!({"count": N, "batch_size": 1})),
        )
        .await?;
    let counted = || {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM steps WHERE task_id = $1 AND state = 'completed'",
                )
                .bind(task.id)
                .fetch_one(&db)
                .await?,
            )
        }
    };
    let quarter = async {
        let mut every = tokio::time::interval(Duration::from_millis(10));
        loop {
            every.tick().await;
            if counted().await? >= N / 4 {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), quarter)
        .await
        .map_err(|_| anyhow::anyhow!("a quarter of the batches never completed"))??;
    a.child.kill().await?;
    let at_kill = counted().await?;
    assert!(at_kill < N, "the fan-out ended before the kill ({at_kill})");

    let done = b.client.wait(task.id, Duration::from_secs(180)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let total = &done.result.as_ref().expect("a task result")["total"];
    assert_eq!(
        (&total["batches"], &total["count"], &total["sum"]),
        (&json!(N), &json!(N), &json!(N * (N - 1) / 2)),
        "{total}"
    );
    // Every step completed, each recorded completed once; `total` dispatched once.
    let (steps, completed, twice): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE state = 'completed'),
                (SELECT count(*) FROM (SELECT step_id FROM transitions
                                       WHERE task_id = $1 AND to_state = 'completed'
                                       GROUP BY step_id HAVING count(*) > 1) x)
         FROM steps WHERE task_id = $1",
    )
    .bind(task.id)
    .fetch_one(&db)
    .await?;
    assert_eq!((steps, completed, twice), (N + 2, N + 2, 0));
    let (attempt, pending, dispatches): (i32, i32, i64) = sqlx::query_as(
        "SELECT s.attempt, s.pending_parents,
                (SELECT count(*) FROM transitions t
                 WHERE t.step_id = s.id AND t.to_state = 'enqueued')
         FROM steps s WHERE s.task_id = $1 AND s.name = 'total'",
    )
    .bind(task.id)
    .fetch_one(&db)
    .await?;
    assert_eq!(
        (attempt, pending, dispatches),
        (1, 0, 1),
        "the convergence step"
    );
    let (open, endings): (i32, i64) = sqlx::query_as(
        "SELECT t.open_steps, (SELECT count(*) FROM transitions h
                               WHERE h.task_id = t.id AND h.step_id IS NULL
                                 AND h.to_state = 'complete')
         FROM tasks t WHERE t.id = $1",
    )
    .bind(task.id)
    .fetch_one(&db)
    .await?;
    assert_eq!((open, endings), (0, 1), "the task");
    worker.child.kill().await?;
    let mut b = b;
    b.child.kill().await?;
    db.close().await;
    env.cleanup().await
}
