//! The retention purge killed midway: 100,000 old finished tasks beside running work, every task
//! whole or gone after the kill, and the next pass taking exactly the old finished ones beside
//! new tasks, with no deadlock.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::TestEnv;
use tasker_client::CreateTask;

use crate::common;

/// The purge: 100,000 finished tasks 40 days old beside running work (a running task
/// with an old finished child, an old finished parent with a running child). A retention pass
/// is SIGKILLed midway: every task is whole or gone, none half-deleted. Another orchestrator's
/// pass then takes exactly the old finished ones, beside new tasks that keep running to
/// completion, with no deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_of_100000_old_tasks_killed_midway_leaves_every_task_whole_or_gone()
-> anyhow::Result<()> {
    const OLD: i64 = 100_000;
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let keep = [("TASKER_RETENTION__COMPLETE", "never")];
    let mut a = common::start_orchestrator_with(&env, common::free_port()?, &keep).await?;
    let url = format!("http://127.0.0.1:{}", a.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker", &url).await?;
    let first = create_with(&a.client, "linear", 6).await?;
    let first = a.client.wait(first, Duration::from_secs(60)).await?;
    assert_eq!(first.state, "complete");
    let per_task: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions WHERE task_id = $1")
        .bind(first.id)
        .fetch_one(&db)
        .await?;
    let copying = std::time::Instant::now();
    let old = tasker::copy_finished_task(
        &env.config.database_url,
        first.id,
        OLD,
        chrono::Duration::days(40),
    )
    .await?;
    eprintln!("copied {OLD} finished tasks in {:?}", copying.elapsed());
    // Unfinished work tied to old finished tasks (tasks that start in an hour, so they stay
    // unfinished while a worker runs the live work below): both stay.
    worker.child.kill().await?;
    let later = |value: i64| {
        let mut t = CreateTask::new("rust_examples", "linear").context(json!({"value": value}));
        t.delay = Some("1h".into());
        t
    };
    let running = a.client.create_task(&later(1)).await?.id;
    let running_child = a.client.create_task(&later(2)).await?.id;
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(old[0])
        .bind(running)
        .execute(&db)
        .await?;
    sqlx::query("UPDATE tasks SET has_children = true WHERE id = $1")
        .bind(old[1])
        .execute(&db)
        .await?;
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(running_child)
        .bind(old[1])
        .execute(&db)
        .await?;
    a.child.kill().await?;

    // Every task whole (its 4 steps, 3 edges, its history) or gone (nothing left, a tombstone).
    let whole_or_gone = || {
        let db = db.clone();
        async move {
            let half: i64 = sqlx::query_scalar(
                "WITH s AS (SELECT task_id, count(*) AS n FROM steps GROUP BY task_id),
                      e AS (SELECT task_id, count(*) AS n FROM step_edges GROUP BY task_id),
                      h AS (SELECT task_id, count(*) AS n FROM transitions GROUP BY task_id)
                 SELECT count(*) FROM tasks t
                 LEFT JOIN s ON s.task_id = t.id
                 LEFT JOIN e ON e.task_id = t.id
                 LEFT JOIN h ON h.task_id = t.id
                 WHERE t.completed_at < now() - interval '30 days'
                   AND (COALESCE(s.n, 0) <> 4 OR COALESCE(e.n, 0) <> 3 OR COALESCE(h.n, 0) <> $1)",
            )
            .bind(per_task)
            .fetch_one(&db)
            .await?;
            let remains: i64 = sqlx::query_scalar(
                "SELECT (SELECT count(*) FROM steps WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM step_edges WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM transitions WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM tasks WHERE id IN (SELECT id FROM purged_tasks))",
            )
            .fetch_one(&db)
            .await?;
            anyhow::ensure!(half == 0, "{half} tasks half-deleted");
            anyhow::ensure!(remains == 0, "{remains} rows of purged tasks remain");
            anyhow::Ok(())
        }
    };
    let purged = || {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>("SELECT count(*) FROM purged_tasks")
                    .fetch_one(&db)
                    .await?,
            )
        }
    };
    let retention = [
        ("TASKER_RETENTION__COMPLETE", "30d"),
        ("TASKER_RETENTION__INTERVAL_MS", "1000"),
        ("TASKER_RETENTION__PAUSE_MS", "0"),
        ("TASKER_RETENTION__BUSY_PERCENT", "100"),
        ("TASKER_RETENTION__BATCH", "2000"),
    ];
    // Killed midway through its pass.
    let mut b = common::start_orchestrator_with(&env, common::free_port()?, &retention).await?;
    let midway = async {
        let mut every = tokio::time::interval(Duration::from_millis(50));
        loop {
            every.tick().await;
            if purged().await? >= 5_000 {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), midway)
        .await
        .map_err(|_| anyhow::anyhow!("the retention pass never got going"))??;
    b.child.kill().await?;
    let at_kill = purged().await?;
    assert!(
        at_kill < OLD - 2,
        "the pass ended before the kill ({at_kill})"
    );
    let checking = std::time::Instant::now();
    whole_or_gone().await?;
    eprintln!(
        "checked every task whole or gone in {:?}",
        checking.elapsed()
    );

    // Another pass finishes it beside live work.
    let deadlocks = || {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>(
                    "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
                )
                .fetch_one(&db)
                .await?,
            )
        }
    };
    let deadlocks_before = deadlocks().await?;
    let c = common::start_orchestrator_with(&env, common::free_port()?, &retention).await?;
    let url = format!("http://127.0.0.1:{}", c.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker-2", &url).await?;
    let mut live = Vec::new();
    let all_gone = async {
        let mut every = tokio::time::interval(Duration::from_millis(100));
        loop {
            every.tick().await;
            live.push(create_with(&c.client, "linear", live.len() as i64).await?);
            if purged().await? == OLD - 2 {
                return anyhow::Ok(());
            }
        }
    };
    let purging = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(600), all_gone)
        .await
        .map_err(|_| anyhow::anyhow!("the purge did not finish"))??;
    eprintln!(
        "purged the rest ({} tasks) in {:?} beside {} new tasks",
        OLD - 2 - at_kill,
        purging.elapsed(),
        live.len()
    );
    whole_or_gone().await?;
    for id in &live {
        let done = c.client.wait(*id, Duration::from_secs(60)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
    }
    assert!(
        live.len() > 5,
        "too little work beside the purge: {}",
        live.len()
    );
    let mut left: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM tasks WHERE NOT (id = ANY($1)) ORDER BY id")
            .bind(&live)
            .fetch_all(&db)
            .await?;
    let mut kept = vec![first.id, running, running_child, old[0], old[1]];
    left.sort();
    kept.sort();
    assert_eq!(left, kept, "exactly the old finished tasks went");
    assert_eq!(
        deadlocks().await?,
        deadlocks_before,
        "deadlocks beside the purge"
    );
    worker.child.kill().await?;
    let mut c = c;
    c.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

async fn create_with(
    client: &tasker_client::Client,
    name: &str,
    value: i64,
) -> anyhow::Result<Uuid> {
    Ok(client
        .create_task(&CreateTask::new("rust_examples", name).context(json!({"value": value})))
        .await?
        .id)
}
