//! Every workflow pattern runs end to end through a real orchestrator, PostgreSQL, RabbitMQ
//! and the Rust worker, and produces the result computed by hand in its template.

use serde_json::{Value, json};
use tasker::{Cluster, steps_by_name};

async fn run(name: &str, context: Value) -> anyhow::Result<(Cluster, tasker_client::Task)> {
    let cluster = Cluster::start().await?;
    let task = cluster
        .orchestrator
        .run_task("rust_examples", name, context)
        .await?;
    Ok((cluster, task))
}

async fn assert_completes_with(name: &str, context: Value, result: Value) -> anyhow::Result<()> {
    let (cluster, task) = run(name, context).await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(task.result, Some(result));
    assert_eq!(task.open_steps, 0);
    let steps = steps_by_name(&cluster.orchestrator.client, task.id).await?;
    for (name, s) in &steps {
        assert_eq!(s.state, "completed", "step {name}");
        assert_eq!(s.attempt, 1, "step {name}");
        assert!(s.dispatched_at.is_some() && s.started_at.is_some() && s.processed_at.is_some());
    }
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_four_steps() -> anyhow::Result<()> {
    assert_completes_with(
        "linear",
        json!({"value": 6}),
        json!({"halve": {"value": 242}}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diamond() -> anyhow::Result<()> {
    assert_completes_with(
        "diamond",
        json!({"value": 3}),
        json!({"join": {"value": 52}}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complex_dag_with_two_and_three_way_joins() -> anyhow::Result<()> {
    assert_completes_with(
        "complex_dag",
        json!({"value": 2}),
        json!({"g": {"value": 64}}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hierarchical_tree_with_four_way_join() -> anyhow::Result<()> {
    assert_completes_with(
        "hierarchical_tree",
        json!({"value": 5}),
        json!({"merge": {"value": 380}}),
    )
    .await
}

async fn conditional(value: i64, taken: &str, skipped: &str, result: i64) -> anyhow::Result<()> {
    let (cluster, task) = run("conditional", json!({ "value": value })).await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(task.result, Some(json!({"finish": {"value": result}})));
    let steps = steps_by_name(&cluster.orchestrator.client, task.id).await?;
    assert_eq!(steps[taken].state, "completed");
    assert_eq!(steps[skipped].state, "skipped");
    assert_eq!(
        steps[skipped].attempt, 0,
        "a skipped branch is never dispatched"
    );
    assert_eq!(steps["finish"].state, "completed");
    assert_eq!(
        steps["route"].result.as_ref().unwrap()["branches"],
        json!([taken])
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_takes_the_large_branch() -> anyhow::Result<()> {
    conditional(42, "large", "small", 7056).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_takes_the_small_branch() -> anyhow::Result<()> {
    conditional(7, "small", "large", 24).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_tasks_all_complete_once() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let mut handles = Vec::new();
    for i in 0..40i64 {
        let client = o.client.clone();
        handles.push(tokio::spawn(async move {
            let t = client
                .create_task(
                    &tasker_client::CreateTask::new("rust_examples", "diamond")
                        .context(json!({ "value": i })),
                )
                .await?;
            let done = client
                .task(t.id, Some(std::time::Duration::from_secs(30)))
                .await?;
            anyhow::Ok((i, done))
        }));
    }
    for h in handles {
        let (i, task) = h.await??;
        assert_eq!(task.state, "complete");
        // start = 2i; left = 4i²; right = 2i + 10; join = 4i² + 2i + 10
        let expected = 4 * i * i + 2 * i + 10;
        assert_eq!(
            task.result,
            Some(json!({"join": {"value": expected}})),
            "i = {i}"
        );
    }
    let history: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM transitions WHERE step_id IS NULL AND to_state = 'complete'",
    )
    .fetch_one(o.shared.store.pool())
    .await?;
    assert_eq!(history, 40, "each task completes exactly once");
    cluster.shutdown().await
}
