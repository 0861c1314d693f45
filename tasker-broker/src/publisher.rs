//! Confirmed publishing: persistent messages, a whole batch per confirm round.

use lapin::PublisherConfirm;
use lapin::options::BasicPublishOptions;
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel};

use crate::error::{Error, Result};

/// A confirm-mode channel. Every message is persistent, carries the connection's user as its
/// `user_id` (which RabbitMQ checks against the login, so a consumer can tell who sent it), and
/// a batch is confirmed as a whole.
#[derive(Debug, Clone)]
pub struct Publisher {
    channel: Channel,
    /// The exchange messages go through: `""` (the default exchange, routing by queue name) or
    /// a named one ([`Publisher::via`]).
    exchange: ShortString,
    user_id: ShortString,
}

impl Publisher {
    /// Wraps a channel already in confirm mode, publishing as `user_id`.
    pub(crate) fn new(channel: Channel, user_id: &str) -> Self {
        Self {
            channel,
            exchange: ShortString::from(""),
            user_id: user_id.into(),
        }
    }

    /// This publisher's messages go through `exchange` instead, each [`Outgoing::queue`] being
    /// its routing key. A worker publishes its results through the results exchange, the only
    /// thing its broker user may write to.
    pub fn via(mut self, exchange: &str) -> Self {
        self.exchange = exchange.into();
        self
    }
}

/// Messages sent by [`Publisher::send_all`], awaiting their confirms.
#[derive(Debug)]
#[must_use = "a round is confirmed only once awaited"]
pub struct Round(Vec<PublisherConfirm>);

impl Round {
    /// Waits for every confirm of the round; a nack or a returned (unroutable) message fails
    /// it.
    pub async fn confirmed(self) -> Result<()> {
        settle(self.0).await
    }
}

/// A message to publish to a queue through the default exchange.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub queue: String,
    pub payload: Vec<u8>,
}

impl Publisher {
    /// Publishes every message, then waits for all their confirms: one confirm round for the
    /// batch. `mandatory` makes an unroutable message (no such queue) an error, not a silent drop.
    pub async fn publish_all(&self, messages: &[Outgoing]) -> Result<()> {
        self.send_all(messages).await?.confirmed().await
    }

    /// Publishes every message without waiting for the broker: the [`Round`] returned waits
    /// for their confirms. Rounds are confirmed independently, so a publisher can send the
    /// next round while earlier ones are still being confirmed (a confirm takes a disk sync on
    /// the broker, which messages published meanwhile would otherwise wait for).
    pub async fn send_all(&self, messages: &[Outgoing]) -> Result<Round> {
        let mut confirms = Vec::with_capacity(messages.len());
        for m in messages {
            confirms.push(self.send(&m.queue, &m.payload, self.properties()).await?);
        }
        Ok(Round(confirms))
    }

    /// Publishes one message with `headers` and waits for its confirm.
    pub async fn publish_with_headers(
        &self,
        queue: &str,
        payload: &[u8],
        headers: FieldTable,
    ) -> Result<()> {
        let confirm = self
            .send(queue, payload, self.properties().with_headers(headers))
            .await?;
        settle(vec![confirm]).await
    }

    async fn send(
        &self,
        queue: &str,
        payload: &[u8],
        properties: BasicProperties,
    ) -> Result<PublisherConfirm> {
        Ok(self
            .channel
            .basic_publish(
                self.exchange.clone(),
                queue.into(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                payload,
                properties,
            )
            .await?)
    }

    pub fn is_open(&self) -> bool {
        self.channel.status().connected()
    }

    /// Every Tasker message is persistent JSON, sent as this connection's user.
    fn properties(&self) -> BasicProperties {
        BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_user_id(self.user_id.clone())
    }
}

/// Waits for every confirm of a round; a nack or a returned (unroutable) message fails it.
async fn settle(confirms: Vec<PublisherConfirm>) -> Result<()> {
    let (mut nacked, mut returned) = (0, 0);
    for confirm in confirms {
        let confirmation = confirm.await?;
        if confirmation.is_nack() {
            nacked += 1;
        }
        if confirmation.take_message().is_some() {
            returned += 1;
        }
    }
    if nacked > 0 {
        return Err(Error::Nacked(nacked));
    }
    if returned > 0 {
        return Err(Error::Unroutable(returned));
    }
    Ok(())
}
