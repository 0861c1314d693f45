//! Dead letters made on purpose: a message published to the dead-letter queue with the headers
//! the orchestrator reads (where it came from, why, who sent it), as if a queue had refused it.

use tasker_broker::dead::{ORIGIN_HEADER, REASON_HEADER, SENDER_HEADER};
use tasker_broker::{AMQPValue, Broker, FieldTable, topology};
use tasker_shared::{Config, Outcome, StepResult};
use uuid::Uuid;

/// A result of `step` of `task` (attempt 1) returning `result`, as a worker would send it.
pub fn result_of(task: Uuid, step: Uuid, result: serde_json::Value) -> Vec<u8> {
    let r = StepResult {
        task_id: task,
        step_id: step,
        attempt: 1,
        outcome: Outcome::Success { result },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "parked".into(),
        traceparent: None,
        streamed: None,
    };
    serde_json::to_vec(&r).expect("a result encodes")
}

/// Publishes `body` to the dead-letter queue as a message `origin` refused for `reason`, sent
/// by the orchestrators' own broker user (`None`: the results queue); the orchestrator keeps it.
pub async fn park(
    config: &Config,
    body: &[u8],
    reason: &str,
    origin: Option<&str>,
) -> anyhow::Result<()> {
    let broker = Broker::connect(&config.amqp_url, &config.queue_prefix, "test-letters").await?;
    let results = topology::results_queue(&config.queue_prefix);
    let mut headers = FieldTable::default();
    let text = |s: &str| AMQPValue::LongString(s.into());
    headers.insert(ORIGIN_HEADER.into(), text(origin.unwrap_or(&results)));
    headers.insert(REASON_HEADER.into(), text(reason));
    headers.insert(SENDER_HEADER.into(), text(broker.user()));
    broker
        .publisher()
        .await?
        .publish_with_headers(
            &topology::dead_letter_queue(&config.queue_prefix),
            body,
            headers,
        )
        .await?;
    broker.close().await;
    Ok(())
}
