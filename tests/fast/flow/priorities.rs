//! Priorities: throttled steps start high priority first, and each priority's step messages
//! travel in a lane of their own.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use tasker::steps_by_name;
use tasker_client::{CreateTask, Priority};

use super::{create, env, no_slot_held};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_steps_start_high_priority_first() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let holder = create(&o, "single_file", json!({"account": "p", "sleep_ms": 400})).await?;
    let mut waiting = Vec::new();
    for (label, priority) in [
        ("low1", None),
        ("normal", Some(Priority::Normal)),
        ("low2", None),
        ("high", Some(Priority::High)),
    ] {
        let mut req = CreateTask::new("rust_examples", "single_file")
            .context(json!({"account": "p", "sleep_ms": 0}));
        req.priority = priority;
        let t = o.client.create_task(&req).await?;
        waiting.push((label, t.id));
    }
    for (_, id) in &waiting {
        assert_eq!(o.wait(*id).await?.state, "complete");
    }
    assert_eq!(o.wait(holder.id).await?.state, "complete");
    let mut started: Vec<(DateTime<Utc>, &str)> = Vec::new();
    for (label, id) in &waiting {
        let s = steps_by_name(&o.client, *id).await?;
        started.push((s["book"].dispatched_at.unwrap(), label));
    }
    started.sort();
    let order: Vec<&str> = started.iter().map(|(_, l)| *l).collect();
    assert_eq!(order, ["high", "normal", "low1", "low2"]);
    let high = o.client.task(waiting[3].1, None).await?;
    assert_eq!(high.priority, "high");
    no_slot_held(&o).await?;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_priority_travels_in_its_own_lane() -> anyhow::Result<()> {
    use futures_util::StreamExt;
    let env = env().await?;
    let o = env.orchestrator().await?;
    // No worker: each root step's message waits in its lane, where this test reads it.
    let broker = tasker_broker::Broker::connect(
        &env.config.amqp_url,
        &env.config.queue_prefix,
        "lane-reader",
    )
    .await?;
    for (priority, lane) in [
        (Priority::High, Some("high")),
        (Priority::Normal, None),
        (Priority::Low, Some("low")),
    ] {
        let task = o
            .client
            .create_task(
                &CreateTask::new("rust_examples", "linear")
                    .context(json!({"value": 6}))
                    .priority(priority),
            )
            .await?;
        let queue =
            tasker_broker::topology::lane_queue(&env.config.queue_prefix, "rust_examples", lane);
        let mut sub = broker.consume(&queue, "lane-reader", 1).await?;
        let delivery = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await?
            .expect("a delivery")?;
        let steps: Vec<Value> = tasker_shared::message::decode_batch(&delivery.data)?;
        assert_eq!(steps.len(), 1, "{queue}: {steps:?}");
        assert_eq!(steps[0]["task_id"], json!(task.id), "{queue}");
        // Only a priority that is not normal is written into the message.
        assert_eq!(
            steps[0].get("priority"),
            lane.map(|l| json!(l)).as_ref(),
            "{queue}: {}",
            steps[0]
        );
    }
    broker.close().await;
    o.stop().await;
    env.cleanup().await
}
