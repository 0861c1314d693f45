//! The queue topology a [`Broker`] declares (or, for a user that may not declare, checks):
//! the results queue and exchange, the streams queue, the dead letters, each namespace's steps queues.

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::{Channel, ExchangeKind};

use crate::connect::{Broker, answered};
use crate::error::{ACCESS_REFUSED, Error, NOT_FOUND, PRECONDITION_FAILED, Result};
use crate::topology;
use lapin::types::{AMQPValue, FieldTable};

/// With quorum queues, a message delivered this many times without being acknowledged (a
/// handler that kills its worker, again and again) goes to the dead letters instead of being
/// delivered once more.
pub const DELIVERY_LIMIT: i64 = 20;

impl Broker {
    /// Declares the results queue and exchange, the dead-letter queue and each namespace's
    /// steps queue and lanes. Declaring is idempotent: the orchestrator and every worker
    /// allowed to declare what they use do, so no message is ever published to a queue that
    /// does not exist yet. A user the broker does not allow to declare (a worker's own user, allowed to
    /// read its step queues and write results only) checks instead that they exist (a passive
    /// declare needs no permission): [`Error::Missing`] if one does not yet.
    pub async fn declare(&self, namespaces: &[String]) -> Result<()> {
        let channel = self.channel().await?;
        match answered("queue.declare", self.declare_on(&channel, namespaces)).await {
            Ok(()) => {
                let _ = answered("channel.close", channel.close(200, "declared".into())).await;
                Ok(())
            }
            // The refusal closed that channel.
            Err(e) if e.reply_code() == Some(ACCESS_REFUSED) => self.check(namespaces).await,
            Err(e) if e.reply_code() == Some(PRECONDITION_FAILED) => Err(Error::QueueType {
                wanted: if self.quorum { "quorum" } else { "classic" },
                message: e.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    /// What a worker needs, without asking for more than it may: checks that the results
    /// exchange and each namespace's steps queue exist (a passive declare, which needs no
    /// permission), and declares ([`Broker::declare`]) only when one is missing. A worker's
    /// own broker user (read its step queues, write results) so never attempts a declare the
    /// broker refuses, which would close its channel and log an error at every start.
    pub async fn ensure(&self, namespaces: &[String]) -> Result<()> {
        match self.check(namespaces).await {
            Err(Error::Missing(_)) => self.declare(namespaces).await,
            checked => checked,
        }
    }

    /// Checks, without declaring anything, that the results exchange and each namespace's
    /// steps queue exist.
    async fn check(&self, namespaces: &[String]) -> Result<()> {
        let exchange = topology::results_exchange(&self.prefix);
        let mut objects = vec![(format!("the results exchange {exchange:?}"), None, exchange)];
        for ns in namespaces {
            for queue in topology::namespace_queues(&self.prefix, ns) {
                objects.push((format!("the steps queue {queue:?}"), Some(()), queue));
            }
        }
        for (what, is_queue, name) in objects {
            // A failed passive declare closes its channel: one channel each.
            let channel = self.channel().await?;
            let checked = if is_queue.is_some() {
                let passive = QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                };
                answered(
                    "queue.declare",
                    channel.queue_declare(name.into(), passive, FieldTable::default()),
                )
                .await
                .map(drop)
            } else {
                let passive = ExchangeDeclareOptions {
                    passive: true,
                    ..ExchangeDeclareOptions::default()
                };
                answered(
                    "exchange.declare",
                    channel.exchange_declare(
                        name.into(),
                        ExchangeKind::Direct,
                        passive,
                        FieldTable::default(),
                    ),
                )
                .await
            };
            match checked {
                Ok(()) => {
                    let _ = answered("channel.close", channel.close(200, "checked".into())).await;
                }
                Err(e) if e.reply_code() == Some(NOT_FOUND) => return Err(Error::Missing(what)),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn declare_on(&self, channel: &Channel, namespaces: &[String]) -> lapin::Result<()> {
        let dead = topology::dead_letter_queue(&self.prefix);
        channel
            .queue_declare(dead.into(), durable(), self.queue_args(None))
            .await?;
        let results = topology::results_queue(&self.prefix);
        channel
            .queue_declare(results.clone().into(), durable(), self.dead_letter_args())
            .await?;
        // Workers publish results through this exchange (the default exchange would let them
        // write to any queue); it routes them to the results queue.
        let exchange = topology::results_exchange(&self.prefix);
        channel
            .exchange_declare(
                exchange.clone().into(),
                ExchangeKind::Direct,
                ExchangeDeclareOptions {
                    durable: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await?;
        channel
            .queue_bind(
                results.clone().into(),
                exchange.clone().into(),
                results.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
        // Stream chunks, through the same exchange: one consumer at a time keeps their order.
        let streams = topology::streams_queue(&self.prefix);
        let mut args = self.dead_letter_args();
        args.insert("x-single-active-consumer".into(), AMQPValue::Boolean(true));
        channel
            .queue_declare(streams.clone().into(), durable(), args)
            .await?;
        channel
            .queue_bind(
                streams.clone().into(),
                exchange.into(),
                streams.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
        for ns in namespaces {
            for queue in topology::namespace_queues(&self.prefix, ns) {
                channel
                    .queue_declare(queue.into(), durable(), self.dead_letter_args())
                    .await?;
            }
        }
        Ok(())
    }

    /// A queue's type (for quorum queues, with the delivery limit of those dead-lettered).
    fn queue_args(&self, delivery_limit: Option<i64>) -> FieldTable {
        let mut args = FieldTable::default();
        if self.quorum {
            args.insert(
                "x-queue-type".into(),
                AMQPValue::LongString("quorum".into()),
            );
            if let Some(limit) = delivery_limit {
                args.insert("x-delivery-limit".into(), AMQPValue::LongLongInt(limit));
            }
        }
        args
    }

    /// A queue whose rejected (and, with quorum queues, too often delivered) messages go to
    /// the dead letters.
    fn dead_letter_args(&self) -> FieldTable {
        let mut args = self.queue_args(Some(DELIVERY_LIMIT));
        args.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString("".into()),
        );
        args.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(topology::dead_letter_queue(&self.prefix).into()),
        );
        args
    }
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}
