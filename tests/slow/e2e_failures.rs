//! Failure semantics: retries with backoff, permanent failure, timeouts, panics, cancellation,
//! duplicate / stale / malformed results.

use std::time::Duration;

use serde_json::json;
use tasker::{Cluster, steps_by_name};
use tasker_broker::topology;
use tasker_orchestration::events::Event;
use tasker_shared::{Outcome, StepResult};
use tokio::sync::broadcast;
use uuid::Uuid;

/// Waits (at most 15 s) for an event showing that the result of `step` was ignored.
async fn ignored(events: &mut broadcast::Receiver<Event>, step: Uuid) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            if let Event::ResultsApplied { ignored, .. } = events.recv().await?
                && ignored.contains(&step)
            {
                return anyhow::Ok(());
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("no ignored result for step {step} within 15 s"))?
}

async fn history_count(cluster: &Cluster, task: Uuid, step: &str, to: &str) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM transitions h JOIN steps s ON s.id = h.step_id
         WHERE h.task_id = $1 AND s.name = $2 AND h.to_state = $3",
    )
    .bind(task)
    .bind(step)
    .bind(to)
    .fetch_one(cluster.orchestrator.shared.store.pool())
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_failure_is_retried_with_backoff_then_succeeds() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .run_task("rust_examples", "retry_then_succeed", json!({}))
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(
        task.result,
        Some(json!({"after": {"attempt": 1, "parents": {"flaky": {"attempts": 3}}}}))
    );
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["flaky"].attempt, 3);
    assert_eq!(
        history_count(&cluster, task.id, "flaky", "waiting_retry").await?,
        2
    );
    assert_eq!(
        history_count(&cluster, task.id, "flaky", "enqueued").await?,
        3
    );
    // Backoff: exponential from 20 ms, so the retries waited at least 20 + 40 ms in all.
    let flaky = &steps["flaky"];
    let first_dispatch: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT min(h.at) FROM transitions h JOIN steps s ON s.id = h.step_id
         WHERE h.task_id = $1 AND s.name = 'flaky' AND h.to_state = 'enqueued'",
    )
    .bind(task.id)
    .fetch_one(o.shared.store.pool())
    .await?;
    let last_dispatch = flaky.dispatched_at.unwrap();
    assert!(
        (last_dispatch - first_dispatch).num_milliseconds() >= 60,
        "backoff of 20 + 40 ms was not respected"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_failure_ends_the_task_without_retry() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .run_task("rust_examples", "permanent_failure", json!({}))
        .await?;
    assert_eq!(task.state, "error");
    let error = task
        .error
        .expect("the task records the failing step's error");
    assert_eq!(error["step"], "doomed");
    assert_eq!(error["error"]["kind"], "validation");
    assert_eq!(error["error"]["message"], "input rejected for good");
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["doomed"].state, "failed");
    assert_eq!(
        steps["doomed"].attempt, 1,
        "a permanent failure is not retried"
    );
    assert_eq!(steps["never"].state, "cancelled");
    assert_eq!(steps["never"].attempt, 0, "the dependent step never ran");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_timeout_fails_each_attempt_then_the_task() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .run_task("rust_examples", "timeout", json!({"sleep_ms": 10_000}))
        .await?;
    assert_eq!(task.state, "error");
    let steps = steps_by_name(&o.client, task.id).await?;
    let slow = &steps["slow"];
    assert_eq!(slow.state, "failed");
    assert_eq!(slow.attempt, 2, "timed-out attempts are retried by policy");
    assert_eq!(slow.error.as_ref().unwrap()["kind"], "timeout");
    let took = task.duration_ms.unwrap();
    assert!(
        took < 8_000.0,
        "timeouts must not wait for the handler: {took} ms"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_handler_fails_its_step_and_the_worker_keeps_running() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o.run_task("rust_examples", "panic", json!({})).await?;
    assert_eq!(task.state, "error");
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["boom"].attempt, 2);
    let error = steps["boom"].error.as_ref().unwrap();
    assert_eq!(error["kind"], "panic");
    assert!(error["message"].as_str().unwrap().contains("always panics"));
    let after = o
        .run_task("rust_examples", "linear", json!({"value": 1}))
        .await?;
    assert_eq!(after.state, "complete", "the same worker still runs steps");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_dispatch_and_ignores_the_late_result() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let mut events = o.events().subscribe();
    let task = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 300})),
        )
        .await?;
    let cancelled = o.client.cancel(task.id).await?;
    assert_eq!(cancelled.state, "cancelled");
    let again = o.client.cancel(task.id).await.unwrap_err();
    assert!(again.to_string().contains("task_not_running"), "{again}");
    let steps = steps_by_name(&o.client, task.id).await?;
    ignored(&mut events, steps["slow"].id).await?;
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["slow"].state, "cancelled");
    assert_eq!(steps["slow"].result, None, "the late result is not stored");
    assert_eq!(steps["quick"].state, "cancelled");
    assert_eq!(
        steps["quick"].attempt, 0,
        "nothing is dispatched after a cancel"
    );
    let task = o.client.task(task.id, None).await?;
    assert_eq!(task.state, "cancelled");
    cluster.shutdown().await
}

/// A copy of a result already applied (the same attempt: a redelivery) is ignored; a result for
/// an attempt the step was never at changes nothing and goes to the dead letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_results_are_ignored_and_stale_ones_dead_lettered() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let mut kept = o.dead_letters_kept();
    let task = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    assert_eq!(task.state, "complete");
    let steps = steps_by_name(&o.client, task.id).await?;
    let double = &steps["double"];
    let broker = tasker_broker::Broker::connect(
        &cluster.env.config.amqp_url,
        &cluster.env.config.queue_prefix,
        "test",
    )
    .await?;
    let publisher = broker.publisher().await?;
    let mut events = o.events().subscribe();
    let forged = |attempt| StepResult {
        task_id: task.id,
        step_id: double.id,
        attempt,
        outcome: Outcome::Success {
            result: json!({"value": -1}),
        },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "forger".into(),
        traceparent: None,
        streamed: None,
    };
    let queue = topology::results_queue(&cluster.env.config.queue_prefix);
    for r in [forged(1), forged(7)] {
        publisher
            .publish_all(&[tasker_broker::Outgoing {
                queue: queue.clone(),
                payload: serde_json::to_vec(&r)?,
            }])
            .await?;
    }
    ignored(&mut events, double.id).await?;
    let id = kept.take(1, Duration::from_secs(15)).await?[0];
    let letter = o.shared.store.dead_letter(id).await?.expect("kept");
    assert!(
        letter
            .view
            .reason
            .starts_with("result_mismatch: attempt 7 of step"),
        "{}",
        letter.view.reason
    );
    let after = steps_by_name(&o.client, task.id).await?;
    assert_eq!(after["double"].result, Some(json!({"value": 12})));
    assert_eq!(after["double"].worker, double.worker);
    let task = o.client.task(task.id, None).await?;
    assert_eq!(task.result, Some(json!({"halve": {"value": 242}})));
    broker.close().await;
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_result_is_dead_lettered_and_changes_nothing() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let cfg = &cluster.env.config;
    let o = &cluster.orchestrator;
    let mut kept = o.dead_letters_kept();
    let broker = tasker_broker::Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    let publisher = broker.publisher().await?;
    publisher
        .publish_all(&[tasker_broker::Outgoing {
            queue: topology::results_queue(&cfg.queue_prefix),
            payload: b"{not json".to_vec(),
        }])
        .await?;
    let ids = kept.take(1, Duration::from_secs(15)).await?;
    let dead = o.client.dead_letter(ids[0]).await?;
    assert_eq!(dead.body_text.as_deref(), Some("{not json"), "{dead:?}");
    assert_eq!(
        dead.info.queue,
        Some(topology::results_queue(&cfg.queue_prefix))
    );
    assert!(
        dead.info.reason.starts_with("malformed result message: "),
        "{}",
        dead.info.reason
    );
    let transitions: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions")
        .fetch_one(o.shared.store.pool())
        .await?;
    assert_eq!(transitions, 0);
    broker.close().await;
    cluster.shutdown().await
}
