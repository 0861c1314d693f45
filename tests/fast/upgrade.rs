//! A database created by the release before the engine moved to `sql/` (migrations 0001-0002,
//! with tasks in every state made by that release's own functions) upgrades in place, and its
//! running tasks finish through the new engine.

use chrono::Utc;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use tasker::{TestEnv, repo_root};
use tasker_orchestration::store::{self, Store};
use tasker_shared::{Outcome, StepResult};

fn id(n: &str) -> Uuid {
    format!("00000000-0000-7000-8000-{n:0>12}")
        .parse()
        .expect("fixture id")
}

async fn state(pool: &PgPool, table: &str, id: Uuid) -> anyhow::Result<String> {
    Ok(
        sqlx::query_scalar(&format!("SELECT state FROM {table} WHERE id = $1"))
            .bind(id)
            .fetch_one(pool)
            .await?,
    )
}

async fn step_named(pool: &PgPool, task: Uuid, name: &str) -> anyhow::Result<Uuid> {
    Ok(
        sqlx::query_scalar("SELECT id FROM steps WHERE task_id = $1 AND name = $2")
            .bind(task)
            .bind(name)
            .fetch_one(pool)
            .await?,
    )
}

/// Applies a success of `step`'s attempt and returns the names of the steps it made ready.
async fn succeed(
    store: &Store,
    task: Uuid,
    step: Uuid,
    attempt: u32,
) -> anyhow::Result<Vec<String>> {
    let now = Utc::now();
    let effects = store
        .apply_results(&[StepResult {
            task_id: task,
            step_id: step,
            attempt,
            outcome: Outcome::Success {
                result: json!({"done": true}),
            },
            started_at: now,
            finished_at: now,
            worker: "upgrade-test".into(),
            traceparent: None,
            streamed: None,
        }])
        .await?;
    let counts = effects.results.expect("a result batch reports its counts");
    anyhow::ensure!(counts.accepted == 1, "result for {step} not accepted");
    let mut names: Vec<String> = effects.dispatch.into_iter().map(|m| m.step_name).collect();
    names.sort();
    Ok(names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_at_migration_0002_upgrades_in_place_and_its_tasks_finish() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let url = env.config.database_url.clone();
    let pool = PgPool::connect(&url).await?;

    // The released schema and engine: migrations 0001 and 0002 exactly as they shipped.
    let mut released = store::migrator();
    released.migrations = released
        .migrations
        .iter()
        .filter(|m| m.version <= 2)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    released.run(&pool).await?;
    let fixture =
        std::fs::read_to_string(repo_root().join("tests/fixtures/upgrade/tasks_at_0002.sql"))?;
    sqlx::raw_sql(&fixture).execute(&pool).await?;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions")
        .fetch_one(&pool)
        .await?;

    // Upgrade: the remaining migrations, then the engine's functions.
    let store = Store::connect(&url, 4).await?;
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&pool)
            .await?;
    let all: Vec<i64> = store::migrator().iter().map(|m| m.version).collect();
    assert_eq!(versions, all, "every migration applied once");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions")
        .fetch_one(&pool)
        .await?;
    assert_eq!(after, before, "the upgrade rewrites no history");
    assert_eq!(
        store.templates().await?.len(),
        1,
        "the template still loads"
    );

    // Every state the old engine produced is still there, and valid under the new constraints.
    let (t1, t2, t3, t4, t5, t6, t7) = (
        id("a1"),
        id("a2"),
        id("a3"),
        id("a4"),
        id("a5"),
        id("a6"),
        id("a7"),
    );
    for (task, want) in [
        (t1, "running"),
        (t2, "running"),
        (t3, "complete"),
        (t4, "error"),
        (t5, "cancelled"),
        (t6, "running"),
        (t7, "running"),
    ] {
        assert_eq!(state(&pool, "tasks", task).await?, want, "task {task}");
    }
    for (step, want) in [
        ("a101", "enqueued"),
        ("a102", "pending"),
        ("a201", "waiting_retry"),
        ("a301", "completed"),
        ("a401", "failed"),
        ("a402", "cancelled"),
        ("a501", "cancelled"),
        ("a603", "skipped"),
    ] {
        assert_eq!(state(&pool, "steps", id(step)).await?, want, "step {step}");
    }

    // The running tasks finish through the new engine.
    assert_eq!(succeed(&store, t1, id("a101"), 1).await?, ["b"]);
    assert_eq!(succeed(&store, t1, id("a102"), 1).await?, ["c"]);
    assert!(succeed(&store, t1, id("a103"), 1).await?.is_empty());

    let retried = store.dispatch_retries(&[id("a201")]).await?;
    assert_eq!(retried.dispatch.len(), 1);
    assert_eq!(retried.dispatch[0].attempt, 2);
    succeed(&store, t2, id("a201"), 2).await?;

    assert_eq!(succeed(&store, t6, id("a602"), 1).await?, ["j"]);
    succeed(&store, t6, id("a604"), 1).await?;

    let first = step_named(&pool, t7, "work#0").await?;
    let second = step_named(&pool, t7, "work#1").await?;
    assert!(succeed(&store, t7, first, 1).await?.is_empty());
    assert_eq!(succeed(&store, t7, second, 1).await?, ["total"]);
    succeed(&store, t7, id("a702"), 1).await?;

    for task in [t1, t2, t6, t7] {
        assert_eq!(
            state(&pool, "tasks", task).await?,
            "complete",
            "task {task}"
        );
    }
    // Nothing is left running.
    let open: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE state = 'running'")
        .fetch_one(&pool)
        .await?;
    assert_eq!(open, 0);

    pool.close().await;
    store.pool().close().await;
    env.cleanup().await
}
