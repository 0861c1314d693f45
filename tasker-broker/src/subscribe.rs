//! Reading and writing: a [`Publisher`] channel, and a queue's deliveries as a
//! [`Subscription`] that a [`Stopper`] ends.

use lapin::options::{BasicConsumeOptions, BasicQosOptions, ConfirmSelectOptions};
use lapin::{Channel, Consumer};

use lapin::types::FieldTable;

use crate::connect::{Broker, Cancels, answered, lock};
use crate::error::{ACCESS_REFUSED, Error, Result};
use crate::publisher::Publisher;

impl Broker {
    /// A channel in confirm mode for publishing.
    pub async fn publisher(&self) -> Result<Publisher> {
        let channel = self.channel().await?;
        answered(
            "confirm.select",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        Ok(Publisher::new(channel, &self.user))
    }

    /// Consumes `queue` on a channel of its own, at most `prefetch` unacknowledged at once.
    pub async fn consume(&self, queue: &str, tag: &str, prefetch: u16) -> Result<Subscription> {
        let channel = self.channel().await?;
        answered(
            "basic.qos",
            channel.basic_qos(prefetch, BasicQosOptions::default()),
        )
        .await?;
        let consumer = answered(
            "basic.consume",
            channel.basic_consume(
                queue.into(),
                tag.into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            ),
        )
        .await
        .map_err(|e| self.refused(e, format!("reading the queue {queue:?}")))?;
        Ok(Subscription {
            channel,
            consumer,
            cancels: self.cancels.clone(),
        })
    }

    /// `e` as [`Error::Refused`] (naming `what`) when the broker refused this user.
    fn refused(&self, e: Error, what: String) -> Error {
        match &e {
            Error::Amqp(inner) if e.reply_code() == Some(ACCESS_REFUSED) => Error::Refused {
                what,
                user: self.user.clone(),
                message: match inner.kind() {
                    lapin::ErrorKind::ProtocolError(p) => p.get_message().to_string(),
                    _ => inner.to_string(),
                },
            },
            _ => e,
        }
    }
}

/// The deliveries of one queue (a stream), and a way to end them.
#[derive(Debug)]
pub struct Subscription {
    channel: Channel,
    consumer: Consumer,
    cancels: Cancels,
}

impl Drop for Subscription {
    /// Cancels the consumer in a task [`Broker::close`] waits for (see `Cancels`). The task
    /// holds a clone of the consumer, so lapin's own cancel, run when the last one goes, finds
    /// it cancelled already and sends nothing. Outside a runtime lapin's cancel is left to run.
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (channel, consumer) = (self.channel.clone(), self.consumer.clone());
        let cancel = runtime.spawn(async move {
            if channel.status().connected() {
                let tag = consumer.tag();
                let _ = answered(
                    "basic.cancel",
                    channel.basic_cancel(tag, Default::default()),
                )
                .await;
            }
            drop(consumer);
        });
        let mut cancels = lock(&self.cancels);
        cancels.retain(|c| !c.is_finished());
        cancels.push(cancel);
    }
}

impl Subscription {
    /// What ends this subscription's deliveries, usable once the stream is moved elsewhere.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            channel: self.channel.clone(),
            tag: self.consumer.tag(),
        }
    }
}

impl futures_util::Stream for Subscription {
    type Item = <Consumer as futures_util::Stream>::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::pin::Pin::new(&mut self.consumer).poll_next(cx)
    }
}

/// Ends a [`Subscription`]'s deliveries (`basic.cancel`): the broker sends no more, and the
/// stream ends once those already on their way have arrived. Deliveries not yet acknowledged
/// stay with the channel until they are, or are returned to the queue when it closes.
#[derive(Debug, Clone)]
pub struct Stopper {
    channel: Channel,
    tag: lapin::types::ShortString,
}

impl Stopper {
    pub async fn stop(&self) -> Result<()> {
        answered(
            "basic.cancel",
            self.channel
                .basic_cancel(self.tag.clone(), Default::default()),
        )
        .await
    }
}
