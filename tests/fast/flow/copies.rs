//! A copy of a step attempt handed over again after the attempt ended — the broker redelivers
//! it (its first consumer went away), or an orchestrator re-sends it (the one that dispatched
//! it died) — is acknowledged and never run: its handler would run holding no concurrency slot
//! (the CI failure of `a_concurrency_limit_holds_and_frees_every_slot_through_kills`: three of a
//! customer's steps at once under a limit of two). The worker asks the orchestrator before it
//! runs such a copy; one of an attempt that ended in the worker itself is dropped at once.

use std::time::Duration;

use lapin::BasicProperties;
use lapin::options::{BasicGetOptions, BasicPublishOptions};
use serde_json::{Value, json};

use tasker::{RunningOrchestrator, steps_by_name};
use tasker_broker::{Broker, topology};
use tasker_client::Step;
use tasker_worker::Stats;

/// The message of `step`'s first attempt, as the orchestrator sends it; `resent` as a re-send.
fn message(task: &tasker_client::Task, step: &Step, resent: bool) -> Value {
    json!([{
        "task_id": task.id, "step_id": step.id, "namespace": "rust_examples",
        "task_name": "metered", "step_name": step.name, "handler": "metered",
        "attempt": 1, "max_attempts": 3, "context": {"customer": "C", "sleep_ms": 0},
        "parent_results": {}, "dispatched_at": chrono::Utc::now(), "timeout_ms": 30_000,
        "resent": resent,
    }])
}

async fn publish(broker: &Broker, prefix: &str, body: &Value) -> anyhow::Result<()> {
    let channel = broker.channel().await?;
    channel
        .basic_publish(
            "".into(),
            topology::steps_queue(prefix, "rust_examples")
                .as_str()
                .into(),
            BasicPublishOptions::default(),
            &serde_json::to_vec(body)?,
            BasicProperties::default(),
        )
        .await?
        .await?;
    Ok(())
}

/// Waits until the worker has dropped `n` copies, then says what it ran.
async fn dropped(o: &RunningOrchestrator, stats: &Stats, n: u64) -> anyhow::Result<(u64, u64)> {
    use std::sync::atomic::Ordering::Relaxed;
    o.until(Duration::from_secs(10), "the copies dropped", || async {
        Ok((stats.duplicate.load(Relaxed) >= n).then_some(()))
    })
    .await?;
    Ok((stats.succeeded.load(Relaxed), stats.failed.load(Relaxed)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_of_an_attempt_that_ended_is_acknowledged_and_never_run() -> anyhow::Result<()> {
    let mut env = super::env().await?;
    let o = env.orchestrator().await?;
    env.config.worker.orchestrator_url = o.url();
    let prefix = env.config.queue_prefix.clone();
    let first = env.rust_worker_reported(&o.client, &["metered"]).await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let task = super::create(&o, "metered", json!({"customer": "C", "sleep_ms": 0})).await?;
        let task = o.wait(task.id).await?;
        assert_eq!(task.state, "complete");
        let steps = steps_by_name(&o.client, task.id).await?;
        let history = o.client.history(task.id).await?.len();
        tasks.push((task, steps, history));
    }
    first.stop().await;
    let (task, steps, _) = &tasks[0];

    // 1. Redelivered: a copy taken by a consumer that went away without acknowledging it
    //    comes back from the broker flagged `redelivered`.
    let broker = Broker::connect(&env.config.amqp_url, &prefix, "test-copies").await?;
    publish(&broker, &prefix, &message(task, &steps["work"], false)).await?;
    let taker = broker.channel().await?;
    let taken = taker
        .basic_get(
            topology::steps_queue(&prefix, "rust_examples")
                .as_str()
                .into(),
            BasicGetOptions { no_ack: false },
        )
        .await?;
    assert!(taken.is_some(), "the copy was in the queue");
    taker.close(200, "gone".into()).await?;
    // 2. Re-sent, as the sweeper re-sends what a dead orchestrator dispatched.
    publish(&broker, &prefix, &message(task, &steps["again"], true)).await?;

    // A worker that never ran either attempt: only the orchestrator knows they ended.
    let second = env.rust_worker_reported(&o.client, &["metered"]).await?;
    assert_eq!(dropped(&o, &second.stats, 2).await?, (0, 0), "no copy ran");

    // The control: a first message of an ended attempt (the worker cannot tell it from a
    // live one) runs, and its result changes nothing; a copy of it afterwards is dropped by
    // the worker that ran it, without asking.
    let (task, steps, _) = &tasks[1];
    publish(&broker, &prefix, &message(task, &steps["work"], false)).await?;
    o.until(Duration::from_secs(10), "the first message run", || async {
        Ok((second
            .stats
            .succeeded
            .load(std::sync::atomic::Ordering::Relaxed)
            == 1)
            .then_some(()))
    })
    .await?;
    publish(&broker, &prefix, &message(task, &steps["work"], true)).await?;
    assert_eq!(dropped(&o, &second.stats, 3).await?, (1, 0));

    // The tasks are as they were: no step moved, no transition added, no slot held.
    for (task, steps, history) in &tasks {
        assert_eq!(&steps_by_name(&o.client, task.id).await?, steps);
        assert_eq!(o.client.history(task.id).await?.len(), *history);
    }
    super::no_slot_held(&o).await?;
    broker.close().await;
    second.stop().await;
    o.stop().await;
    env.cleanup().await
}
