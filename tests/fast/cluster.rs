//! Two orchestrators and two workers on one database and broker: many tasks, submitted to both,
//! each completes exactly once with the right result, and both orchestrators apply results.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker_orchestration::events::Event;
use tokio::sync::broadcast;

fn accepted(rx: &mut broadcast::Receiver<Event>) -> usize {
    let mut n = 0;
    while let Ok(e) = rx.try_recv() {
        if let Event::ResultsApplied { accepted, .. } = e {
            n += accepted;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_orchestrators_complete_every_task_exactly_once() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let a = env.orchestrator().await?;
    let b = env.orchestrator().await?;
    let workers = [env.rust_worker(), env.rust_worker()];
    let (mut events_a, mut events_b) = (a.events().subscribe(), b.events().subscribe());
    let mut runs = Vec::new();
    for i in 0..60i64 {
        // Round-robin over both orchestrators, and wait on the other one.
        let (submit, wait) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let (submit, wait) = (submit.client.clone(), wait.client.clone());
        runs.push(tokio::spawn(async move {
            let t = submit
                .create_task(
                    &tasker_client::CreateTask::new("rust_examples", "diamond")
                        .context(json!({ "value": i })),
                )
                .await?;
            let done = wait.task(t.id, Some(Duration::from_secs(60))).await?;
            anyhow::Ok((i, done))
        }));
    }
    for run in runs {
        let (i, task) = run.await??;
        assert_eq!(task.state, "complete", "task {i}");
        assert_eq!(
            task.result,
            Some(json!({"join": {"value": 4 * i * i + 2 * i + 10}})),
            "task {i}"
        );
    }
    let pool = a.shared.store.pool();
    let per_task: Vec<(i64,)> = sqlx::query_as(
        "SELECT count(*) FROM transitions WHERE step_id IS NULL AND to_state = 'complete'
         GROUP BY task_id",
    )
    .fetch_all(pool)
    .await?;
    assert_eq!(per_task.len(), 60);
    assert!(
        per_task.iter().all(|(n,)| *n == 1),
        "each task completes once"
    );
    let completions: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM transitions WHERE step_id IS NOT NULL AND to_state = 'completed'",
    )
    .fetch_one(pool)
    .await?;
    assert_eq!(completions, 60 * 4, "each step completes exactly once");
    let (by_a, by_b) = (accepted(&mut events_a), accepted(&mut events_b));
    assert_eq!(by_a + by_b, 240);
    assert!(
        by_a > 0 && by_b > 0,
        "both orchestrators applied results: {by_a} / {by_b}"
    );
    for w in workers {
        w.stop().await;
    }
    a.stop().await;
    b.stop().await;
    env.cleanup().await
}
