//! Rolling restarts: two orchestrators started 40 times, one after the other, under load, a
//! newer build's engine SQL applied in place before every fifth start.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::CreateTask;

/// A rolling restart fails nobody's task: two orchestrators and a worker under a steady load
/// of 4-step tasks (about 300 steps a second) while the orchestrators start 40 times, one after
/// the other; before every fifth start a newer build applies its engine SQL with a changed
/// `tasker_apply_run` (in place, while the other orchestrator runs and calls it). Every start
/// succeeds; every task completes; none is lost; no transition is applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_orchestrator_starts_under_load_fail_no_task() -> anyhow::Result<()> {
    use tasker_orchestration::store::{apply_engine, engine};
    let env = TestEnv::new().await?;
    let mut config = env.config.clone();
    config.worker.concurrency = 32;
    let mut live = vec![
        RunningOrchestrator::start(config.clone()).await?,
        RunningOrchestrator::start(config.clone()).await?,
    ];
    let worker = env.rust_worker();
    let urls: Vec<String> = live.iter().map(RunningOrchestrator::url).collect();
    let created = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Uuid>::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    // The load: 15 tasks every 200 ms through whichever orchestrator answers (one may be
    // restarting; a refused connection is tried on the other, a batch is created at most once
    // thanks to its idempotency keys).
    let load = {
        let (created, stop) = (created.clone(), stop.clone());
        let pool = sqlx::PgPool::connect(&config.database_url).await?;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            for round in 0u64.. {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let batch: Vec<CreateTask> = (0..15)
                    .map(|i| CreateTask {
                        idempotency_key: Some(format!("rolling-{round}-{i}")),
                        ..CreateTask::new("rust_examples", "linear").context(json!({"value": i}))
                    })
                    .collect();
                for attempt in 0..20usize {
                    let client = tasker_client::Client::new(&urls[attempt % 2]);
                    if client.create_tasks(&batch).await.is_ok() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let keys: Vec<String> = (0..15).map(|i| format!("rolling-{round}-{i}")).collect();
                let ids: Vec<Uuid> =
                    sqlx::query_scalar("SELECT id FROM tasks WHERE idempotency_key = ANY($1)")
                        .bind(&keys)
                        .fetch_all(&pool)
                        .await
                        .unwrap_or_default();
                created
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(ids);
            }
            pool.close().await;
        })
    };
    let store = tasker_orchestration::store::Store::connect(&config.database_url, 2).await?;
    for start in 0..40 {
        if start % 5 == 4 {
            // A newer build's start: its tasker_apply_run differs, applied in place.
            let mut newer = engine();
            if let Some(run) = newer.iter_mut().find(|(n, _)| *n == "tasker_apply_run") {
                run.1 = run
                    .1
                    .replacen("BEGIN", &format!("BEGIN\n    -- build {start}"), 1);
            }
            apply_engine(store.pool(), &newer, &format!("999.0.{start}")).await?;
        }
        let i = start % 2;
        let old = live.remove(i);
        let addr = old.addr.to_string();
        old.stop().await;
        let restarted = RunningOrchestrator::start_on(config.clone(), &addr)
            .await
            .map_err(|e| anyhow::anyhow!("start {start} failed: {e}"))?;
        live.insert(i, restarted);
    }
    stop.cancel();
    load.await?;
    let ids = created.lock().unwrap_or_else(|p| p.into_inner()).clone();
    anyhow::ensure!(ids.len() > 600, "only {} tasks created", ids.len());
    for id in &ids {
        let task = live[0].wait(*id).await?;
        anyhow::ensure!(task.state == "complete", "task {id} ended {task:?}");
    }
    let pool = store.pool();
    let errors: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE state <> 'complete'")
        .fetch_one(pool)
        .await?;
    anyhow::ensure!(errors == 0, "{errors} tasks did not complete");
    let twice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM transitions WHERE step_id IS NOT NULL
                               GROUP BY step_id, attempt, to_state HAVING count(*) > 1) x",
    )
    .fetch_one(pool)
    .await?;
    anyhow::ensure!(twice == 0, "{twice} transitions applied twice");
    println!(
        "rolling restarts: 40 starts, {} tasks, none failed",
        ids.len()
    );
    worker.stop().await;
    for o in live {
        o.stop().await;
    }
    store.pool().close().await;
    env.cleanup().await
}
