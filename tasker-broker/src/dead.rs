//! Dead letters: a message Tasker cannot process (malformed, or a result that cannot be applied)
//! is moved to the dead-letter queue with the reason, so that the orchestrator can keep it
//! (`dead_letters` table) for someone to inspect, replay or discard.
//!
//! Tasker publishes the message again to the dead-letter queue with two headers, its origin
//! ([`ORIGIN_HEADER`]) and the reason ([`REASON_HEADER`]), then acks the original. If that
//! publish fails, the delivery is rejected instead and RabbitMQ dead-letters it through the
//! queue's dead-letter exchange; it then carries RabbitMQ's `x-death` header (queue and
//! reason `rejected`) but not Tasker's reason. [`origin`] reads either.

use std::sync::Arc;

use lapin::BasicProperties;
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable};
use tokio::sync::Mutex;

use crate::{Broker, Publisher, Result, topology};

/// The queue a dead letter was taken from.
pub const ORIGIN_HEADER: &str = "x-tasker-origin";
/// Why Tasker could not process it.
pub const REASON_HEADER: &str = "x-tasker-reason";
/// Who sent it: the broker user RabbitMQ validated as its publisher (its `user_id`), or the
/// sender it already named (a replay). A replayed result keeps the permissions of its first
/// sender this way.
pub const SENDER_HEADER: &str = "x-tasker-sender";

/// Moves deliveries to the dead letters over one broker connection. Cheap to clone; the
/// publishing channel is opened on first use and again after it closes.
#[derive(Debug, Clone)]
pub struct DeadLetters {
    broker: Broker,
    publisher: Arc<Mutex<Option<Publisher>>>,
}

impl DeadLetters {
    pub fn new(broker: Broker) -> Self {
        Self {
            broker,
            publisher: Arc::default(),
        }
    }

    /// Moves `delivery` to the dead letters with `reason`, then settles it. Its origin is the
    /// queue it was published to (its routing key: on the default exchange the queue's name,
    /// on the results exchange the results queue's).
    pub async fn bury(&self, delivery: &Delivery, reason: &str) -> Result<()> {
        self.bury_from(delivery, reason, publisher(&delivery.properties))
            .await
    }

    /// [`DeadLetters::bury`], recording `sender` as who sent it ([`SENDER_HEADER`]): the
    /// consumer that judged the message says whom it was from.
    pub async fn bury_from(
        &self,
        delivery: &Delivery,
        reason: &str,
        sender: Option<&str>,
    ) -> Result<()> {
        match self.publish(delivery, reason, sender).await {
            Ok(()) => {
                delivery.ack(BasicAckOptions::default()).await?;
            }
            Err(e) => {
                tracing::warn!(error = %e, %reason,
                    "could not publish a dead letter with its reason; rejecting it to the dead-letter exchange instead");
                delivery
                    .reject(BasicRejectOptions { requeue: false })
                    .await?;
            }
        }
        Ok(())
    }

    async fn publish(&self, delivery: &Delivery, reason: &str, sender: Option<&str>) -> Result<()> {
        let mut headers = FieldTable::default();
        headers.insert(
            ORIGIN_HEADER.into(),
            AMQPValue::LongString(delivery.routing_key.as_str().into()),
        );
        headers.insert(REASON_HEADER.into(), AMQPValue::LongString(reason.into()));
        if let Some(sender) = sender {
            headers.insert(SENDER_HEADER.into(), AMQPValue::LongString(sender.into()));
        }
        let mut cached = self.publisher.lock().await;
        let publisher = match cached.as_ref() {
            Some(p) if p.is_open() => p.clone(),
            _ => cached.insert(self.broker.publisher().await?).clone(),
        };
        drop(cached);
        publisher
            .publish_with_headers(
                &topology::dead_letter_queue(self.broker.prefix()),
                &delivery.data,
                headers,
            )
            .await
    }
}

/// The sender a message names ([`SENDER_HEADER`]: set on a dead letter, and on its replay).
/// Believe it only from a publisher trusted to speak for others (the orchestrator itself).
pub fn named_sender(properties: &BasicProperties) -> Option<String> {
    properties
        .headers()
        .as_ref()
        .and_then(|h| string(h.inner().get(SENDER_HEADER)?))
}

/// The broker user a message was published as, validated by RabbitMQ (`None`: it named none).
pub fn publisher(properties: &BasicProperties) -> Option<&str> {
    properties.user_id().as_ref().map(|u| u.as_str())
}

/// Where a dead letter came from and why, as far as its headers tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The queue it was taken from, if known.
    pub queue: Option<String>,
    pub reason: String,
}

/// Reads [`Origin`] from a dead letter's headers: Tasker's own, else RabbitMQ's `x-death`.
pub fn origin(properties: &BasicProperties) -> Origin {
    let headers = properties.headers().as_ref();
    let text = |key: &str| headers.and_then(|h| string(h.inner().get(key)?));
    if let Some(reason) = text(REASON_HEADER) {
        return Origin {
            queue: text(ORIGIN_HEADER),
            reason,
        };
    }
    // RabbitMQ's record, newest first: [{queue, reason, count, time, ...}].
    let death = headers
        .and_then(|h| match h.inner().get("x-death")? {
            AMQPValue::FieldArray(a) => a.as_slice().first().cloned(),
            _ => None,
        })
        .and_then(|d| match d {
            AMQPValue::FieldTable(t) => Some(t),
            _ => None,
        });
    match death {
        Some(d) => {
            let queue = d.inner().get("queue").and_then(string);
            let why = d
                .inner()
                .get("reason")
                .and_then(string)
                .unwrap_or_else(|| "unknown".into());
            Origin {
                reason: format!(
                    "dead-lettered by RabbitMQ ({why}{}); the consumer's log may say why",
                    queue
                        .as_deref()
                        .map(|q| format!(" from {q}"))
                        .unwrap_or_default()
                ),
                queue,
            }
        }
        None => Origin {
            queue: None,
            reason: "published to the dead-letter queue with no reason".into(),
        },
    }
}

fn string(v: &AMQPValue) -> Option<String> {
    match v {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::FieldArray;

    fn with(headers: FieldTable) -> BasicProperties {
        BasicProperties::default().with_headers(headers)
    }

    #[test]
    fn taskers_own_reason_wins() {
        let mut h = FieldTable::default();
        h.insert(REASON_HEADER.into(), AMQPValue::LongString("bad".into()));
        h.insert(
            ORIGIN_HEADER.into(),
            AMQPValue::LongString("t.results".into()),
        );
        assert_eq!(
            origin(&with(h)),
            Origin {
                queue: Some("t.results".into()),
                reason: "bad".into()
            }
        );
    }

    #[test]
    fn rabbitmqs_record_names_the_queue() {
        let mut death = FieldTable::default();
        death.insert("queue".into(), AMQPValue::LongString("t.steps.a".into()));
        death.insert("reason".into(), AMQPValue::LongString("rejected".into()));
        let mut h = FieldTable::default();
        h.insert(
            "x-death".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        let o = origin(&with(h));
        assert_eq!(o.queue.as_deref(), Some("t.steps.a"));
        assert!(o.reason.contains("rejected from t.steps.a"), "{}", o.reason);
    }

    #[test]
    fn no_headers_no_origin() {
        let o = origin(&BasicProperties::default());
        assert_eq!(o.queue, None);
        assert!(o.reason.contains("no reason"));
    }
}
