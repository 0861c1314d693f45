//! Dead letters: a message Tasker cannot process (malformed, or a result that cannot be applied)
//! is moved to the dead-letter queue with the reason, so that the orchestrator can keep it
//! (`dead_letters` table) for someone to inspect, replay or discard.
//!
//! Tasker publishes the message again to the dead-letter queue with three headers, its origin
//! ([`ORIGIN_HEADER`]), the reason ([`REASON_HEADER`]) and its sender ([`SENDER_HEADER`]), then
//! acks the original. If that publish fails, the delivery is rejected instead and RabbitMQ
//! dead-letters it through the queue's dead-letter exchange; it then carries RabbitMQ's
//! `x-death` header (queue and reason `rejected`) but not Tasker's reason.
//!
//! Anyone who may publish can set headers, so [`kept`] believes Tasker's headers only on a
//! message the orchestrator's own broker user published (its `user_id`, which RabbitMQ
//! validates) straight to the dead-letter queue, and RabbitMQ's `x-death` record (its newest
//! entry, which RabbitMQ itself writes) on one it dead-lettered.

use std::sync::Arc;

use lapin::BasicProperties;
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable};
use tokio::sync::Mutex;

use crate::connect::Broker;
use crate::error::Result;
use crate::publisher::Publisher;
use crate::topology;

/// The queue a dead letter was taken from.
pub const ORIGIN_HEADER: &str = "x-tasker-origin";
/// Why Tasker could not process it.
pub const REASON_HEADER: &str = "x-tasker-reason";
/// Who sent it: the broker user RabbitMQ validated as its publisher (its `user_id`), or the
/// sender it already named (a replay); empty when it named none ([`NO_SENDER`]). A replayed
/// result keeps the permissions of its first sender this way, and one that had no sender is
/// never trusted.
pub const SENDER_HEADER: &str = "x-tasker-sender";
/// [`SENDER_HEADER`]'s value for a message that named no broker user.
pub const NO_SENDER: &str = "";

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

    /// [`DeadLetters::bury`], recording `sender` as who sent it ([`SENDER_HEADER`], empty for
    /// none): the consumer that judged the message says whom it was from.
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
        headers.insert(
            SENDER_HEADER.into(),
            AMQPValue::LongString(sender.unwrap_or(NO_SENDER).into()),
        );
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

/// What a kept dead letter is taken to be: where it came from, why, and who sent it — each
/// only from what can be believed (see the module's notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The queue it was taken from, if known for sure (a replay goes back only there).
    pub queue: Option<String>,
    pub reason: String,
    /// The broker user that sent it (`None`: none, so replaying it may move nothing).
    pub sender: Option<String>,
}

/// Reads [`Kept`] from a dead letter's properties; `own` is the orchestrators' broker user.
pub fn kept(properties: &BasicProperties, own: &str) -> Kept {
    let headers = properties.headers().as_ref();
    let text = |key: &str| headers.and_then(|h| string(h.inner().get(key)?));
    let publisher = publisher(properties);
    let ours = publisher == Some(own);
    // What the orchestrator named as the sender on a message it published (a dead letter it
    // buried, a result it replayed); a step message it published names none: its own.
    let named = || match text(SENDER_HEADER) {
        Some(s) if s == NO_SENDER => None,
        Some(s) => Some(s),
        None => Some(own.to_owned()),
    };
    match newest_death(headers) {
        Some((queue, why)) => Kept {
            reason: format!(
                "dead-lettered by RabbitMQ ({why}{}); the consumer's log may say why",
                queue
                    .as_deref()
                    .map(|q| format!(" from {q}"))
                    .unwrap_or_default()
            ),
            queue,
            sender: if ours {
                named()
            } else {
                publisher.map(str::to_owned)
            },
        },
        None if ours => Kept {
            queue: text(ORIGIN_HEADER),
            reason: text(REASON_HEADER)
                .unwrap_or_else(|| "published to the dead-letter queue with no reason".into()),
            sender: match text(SENDER_HEADER) {
                Some(s) if s != NO_SENDER => Some(s),
                // Buried by an orchestrator that recorded no sender: nobody to trust.
                _ => None,
            },
        },
        None => Kept {
            queue: None,
            reason: format!(
                "published straight to the dead-letter queue by broker user {}, not by an \
                 orchestrator, so where it came from is unknown{}",
                publisher.map_or("(none)".to_owned(), |p| format!("{p:?}")),
                text(REASON_HEADER)
                    .map(|r| format!(" (it says: {r})"))
                    .unwrap_or_default()
            ),
            sender: publisher.map(str::to_owned),
        },
    }
}

/// RabbitMQ's newest dead-lettering of a message (`x-death` is newest first, and RabbitMQ puts
/// the entry of the queue it dead-letters from at the front): the queue and the reason.
fn newest_death(headers: Option<&FieldTable>) -> Option<(Option<String>, String)> {
    let death = headers
        .and_then(|h| match h.inner().get("x-death")? {
            AMQPValue::FieldArray(a) => a.as_slice().first().cloned(),
            _ => None,
        })
        .and_then(|d| match d {
            AMQPValue::FieldTable(t) => Some(t),
            _ => None,
        })?;
    let queue = death.inner().get("queue").and_then(string);
    let why = death
        .inner()
        .get("reason")
        .and_then(string)
        .unwrap_or_else(|| "unknown".into());
    Some((queue, why))
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

    fn headers(pairs: &[(&str, &str)]) -> FieldTable {
        let mut h = FieldTable::default();
        for (k, v) in pairs {
            h.insert((*k).into(), AMQPValue::LongString((*v).into()));
        }
        h
    }

    fn death(queue: &str, forged: FieldTable) -> FieldTable {
        let mut death = FieldTable::default();
        death.insert("queue".into(), AMQPValue::LongString(queue.into()));
        death.insert("reason".into(), AMQPValue::LongString("expired".into()));
        let mut h = forged;
        h.insert(
            "x-death".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        h
    }

    fn sent_by(user: Option<&str>, h: FieldTable) -> BasicProperties {
        let p = with(h);
        match user {
            Some(u) => p.with_user_id(u.into()),
            None => p,
        }
    }

    #[test]
    fn the_orchestrators_own_headers_are_believed() {
        let h = headers(&[
            (REASON_HEADER, "bad"),
            (ORIGIN_HEADER, "t.results"),
            (SENDER_HEADER, "worker-a"),
        ]);
        let k = kept(&sent_by(Some("orch"), h), "orch");
        assert_eq!(k.queue.as_deref(), Some("t.results"));
        assert_eq!(k.reason, "bad");
        assert_eq!(k.sender.as_deref(), Some("worker-a"));
        let none = headers(&[(REASON_HEADER, "r"), (SENDER_HEADER, NO_SENDER)]);
        assert_eq!(kept(&sent_by(Some("orch"), none), "orch").sender, None);
        let unrecorded = headers(&[(REASON_HEADER, "r")]);
        assert_eq!(
            kept(&sent_by(Some("orch"), unrecorded), "orch").sender,
            None
        );
    }

    #[test]
    fn anyone_elses_tasker_headers_are_not() {
        let forged = headers(&[
            (REASON_HEADER, "fine"),
            (ORIGIN_HEADER, "t.steps.victim"),
            (SENDER_HEADER, "orch"),
        ]);
        // Published straight to the dead-letter queue by a user that may.
        let k = kept(&sent_by(Some("worker-a"), forged.clone()), "orch");
        assert_eq!(k.queue, None);
        assert_eq!(k.sender.as_deref(), Some("worker-a"));
        assert!(k.reason.contains("not by an orchestrator"), "{}", k.reason);
        // Expired from the results queue into the dead letters: RabbitMQ's record names the
        // queue, the forged origin and sender count for nothing.
        let k = kept(
            &sent_by(Some("worker-a"), death("t.results", forged.clone())),
            "orch",
        );
        assert_eq!(k.queue.as_deref(), Some("t.results"));
        assert_eq!(k.sender.as_deref(), Some("worker-a"));
        assert!(k.reason.contains("expired from t.results"), "{}", k.reason);
        let k = kept(&sent_by(None, death("t.results", forged)), "orch");
        assert_eq!(k.sender, None);
    }

    #[test]
    fn a_step_message_rabbitmq_dead_lettered_was_the_orchestrators() {
        let k = kept(
            &sent_by(Some("orch"), death("t.steps.a", headers(&[]))),
            "orch",
        );
        assert_eq!(k.queue.as_deref(), Some("t.steps.a"));
        assert_eq!(k.sender.as_deref(), Some("orch"));
    }

    #[test]
    fn no_headers_no_origin() {
        let k = kept(&BasicProperties::default(), "orch");
        assert_eq!((k.queue, k.sender), (None, None));
        assert!(k.reason.contains("(none)"), "{}", k.reason);
    }
}
