//! A broker restart in the middle of a task: orchestrator and worker reconnect, the in-flight
//! step is redelivered, and every state transition still happens exactly once.
//! (A test binary of its own: restarting the broker must not disturb other tests.)

use std::time::Duration;

use serde_json::json;
use tasker::{Cluster, repo_root, steps_by_name};

async fn rabbitmqctl(args: &[&str]) -> anyhow::Result<()> {
    let status = tokio::process::Command::new(repo_root().join("cargo-make/services.sh"))
        .arg("rabbitmqctl")
        .args(args)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "rabbitmqctl {args:?} failed: {status}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_mid_task_loses_and_duplicates_nothing() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 1500})),
        )
        .await?;
    // Restart the broker application while the slow step runs: every connection drops.
    rabbitmqctl(&["stop_app"]).await?;
    rabbitmqctl(&["start_app"]).await?;

    let done = o
        .client
        .task(task.id, Some(Duration::from_secs(60)))
        .await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["slow"].result, Some(json!({"slept_ms": 1500})));
    assert_eq!(
        steps["quick"].result,
        Some(json!({"attempt": 1, "parents": {"slow": {"slept_ms": 1500}}}))
    );
    let transitions: Vec<(Option<String>, String, i64)> = sqlx::query_as(
        "SELECT s.name, h.to_state, count(*) FROM transitions h LEFT JOIN steps s ON s.id = h.step_id
         WHERE h.task_id = $1 GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .bind(task.id)
    .fetch_all(o.shared.store.pool())
    .await?;
    for (step, to, n) in &transitions {
        assert_eq!(
            *n, 1,
            "{step:?} -> {to} happened {n} times: {transitions:?}"
        );
    }
    assert!(
        transitions.contains(&(None, "complete".into(), 1)),
        "{transitions:?}"
    );
    // Both sides are connected again: a new task runs through.
    let after = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    assert_eq!(after.result, Some(json!({"halve": {"value": 242}})));
    cluster.shutdown().await
}
