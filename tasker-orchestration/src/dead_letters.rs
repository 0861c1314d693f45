//! The dead-letter keeper: takes every message from the dead-letter queue and keeps it in the
//! `dead_letters` table with where it came from and why (see `tasker_broker::dead`), where the
//! API lists, shows, replays and discards it. A message is acked only once it is stored.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tasker_broker::{AMQPValue, BasicAckOptions, Broker, Delivery, FieldTable, dead, topology};
use tasker_shared::message::decode_batch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub(crate) mod replay;

use crate::events::Event;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{self, NewDeadLetter};

/// Runs until cancelled (`Ok`) or the broker connection fails (`Err`).
pub(crate) async fn run(
    shared: &Shared,
    broker: &Broker,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let queue = topology::dead_letter_queue(&shared.config.queue_prefix);
    let tag = format!("orchestrator-{}-dead", std::process::id());
    let mut consumer = broker.consume(&queue, &tag, 32).await?;
    let own = tasker_broker::user_of(&shared.config.amqp_url);
    loop {
        let batch = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            b = tasker_broker::next_batch(&mut consumer, 32) => b,
        };
        for delivery in batch.ok_or(tasker_broker::Error::Closed)? {
            let delivery = delivery?;
            let letter = read(&delivery, &own);
            loop {
                match shared.store.record_dead_letter(&letter).await {
                    Ok(id) => {
                        tracing::warn!(id, queue = letter.queue.as_deref().unwrap_or("?"),
                            reason = %letter.reason, "dead letter kept");
                        let origin =
                            origin_kind(letter.queue.as_deref(), &shared.config.queue_prefix);
                        metrics::counter!(m::DEAD_LETTERS_KEPT.name, "origin" => origin)
                            .increment(1);
                        shared.events.emit(Event::DeadLetterKept { id });
                        break;
                    }
                    Err(e) => {
                        let unavailable = matches!(e, store::Error::Unavailable(_));
                        tracing::error!(error = %e, unavailable, "keeping a dead letter failed; retrying");
                        // Deliberate backoff: the message stays unacked until it is stored.
                        tokio::select! {
                            () = cancel.cancelled() => return Ok(()),
                            () = tokio::time::sleep(Duration::from_millis(500)) => {}
                        }
                    }
                }
            }
            delivery.ack(BasicAckOptions::default()).await?;
        }
    }
}

/// Where a dead letter came from, as a metric label: one of a fixed few (the queue's own name
/// comes from a header anyone who may publish to the dead-letter queue writes, so it would let
/// them grow the label set without bound).
fn origin_kind(queue: Option<&str>, prefix: &str) -> &'static str {
    let Some(queue) = queue else {
        return "unknown";
    };
    match queue.strip_prefix(prefix).and_then(|q| q.strip_prefix('.')) {
        Some("results") => "results",
        Some(q) if q.starts_with("steps.") => "steps",
        _ => "other",
    }
}

/// The ids a step or result message carries, each entry's for a batch.
#[derive(Deserialize)]
struct Ids {
    task_id: Uuid,
    step_id: Uuid,
}

/// A dead letter as kept: where it came from, why and who sent it as far as that can be
/// believed (`tasker_broker::dead::kept`; `own`: the orchestrators' broker user), and the
/// tasks of every entry (none when one cannot be read: then it is for tokens of every
/// namespace only).
fn read(delivery: &Delivery, own: &str) -> NewDeadLetter {
    let kept = dead::kept(&delivery.properties, own);
    let ids = decode_batch::<Ids>(&delivery.data).unwrap_or_default();
    NewDeadLetter {
        queue: kept.queue.map(|q| text(&q)),
        reason: text(&kept.reason),
        sender: kept.sender.map(|s| text(&s)),
        body: delivery.data.clone(),
        headers: delivery
            .properties
            .headers()
            .as_ref()
            .map_or_else(|| json!({}), table),
        task_id: ids.first().map(|i| i.task_id),
        step_id: ids.first().map(|i| i.step_id),
        task_ids: ids.iter().map(|i| i.task_id).collect(),
    }
}

/// PostgreSQL text and jsonb refuse NUL.
fn text(s: &str) -> String {
    s.replace('\0', "\u{fffd}")
}

fn table(t: &FieldTable) -> Value {
    Value::Object(
        t.inner()
            .iter()
            .map(|(k, v)| (text(k.as_str()), value(v)))
            .collect::<Map<_, _>>(),
    )
}

/// An AMQP header value as JSON: strings as text, numbers as numbers, tables and arrays
/// nested; bytes as text (lossy).
fn value(v: &AMQPValue) -> Value {
    match v {
        AMQPValue::Boolean(b) => json!(b),
        AMQPValue::ShortShortInt(n) => json!(n),
        AMQPValue::ShortShortUInt(n) => json!(n),
        AMQPValue::ShortInt(n) => json!(n),
        AMQPValue::ShortUInt(n) => json!(n),
        AMQPValue::LongInt(n) => json!(n),
        AMQPValue::LongUInt(n) => json!(n),
        AMQPValue::LongLongInt(n) => json!(n),
        AMQPValue::Float(n) => json!(n),
        AMQPValue::Double(n) => json!(n),
        AMQPValue::Timestamp(t) => json!(t),
        AMQPValue::ShortString(s) => json!(text(s.as_str())),
        AMQPValue::LongString(s) => json!(text(&String::from_utf8_lossy(s.as_bytes()))),
        AMQPValue::ByteArray(b) => json!(text(&String::from_utf8_lossy(b.as_slice()))),
        AMQPValue::FieldArray(a) => Value::Array(a.as_slice().iter().map(value).collect()),
        AMQPValue::FieldTable(t) => table(t),
        AMQPValue::DecimalValue(d) => json!(format!("{d:?}")),
        AMQPValue::Void => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasker_broker::FieldArray;

    #[test]
    fn the_origin_label_is_one_of_a_few() {
        assert_eq!(origin_kind(Some("t.results"), "t"), "results");
        assert_eq!(origin_kind(Some("t.steps.shop"), "t"), "steps");
        assert_eq!(origin_kind(Some("t.stepsX"), "t"), "other");
        assert_eq!(origin_kind(Some("anything at all"), "t"), "other");
        assert_eq!(origin_kind(None, "t"), "unknown");
    }

    #[test]
    fn headers_become_json_without_nul() {
        let mut death = FieldTable::default();
        death.insert("count".into(), AMQPValue::LongLongInt(2));
        death.insert("queue".into(), AMQPValue::LongString("t.results".into()));
        let mut h = FieldTable::default();
        h.insert(
            "x-death".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        h.insert("nul".into(), AMQPValue::LongString("a\0b".into()));
        assert_eq!(
            table(&h),
            json!({"x-death": [{"count": 2, "queue": "t.results"}], "nul": "a\u{fffd}b"})
        );
    }
}
