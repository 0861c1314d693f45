//! Tasker's RabbitMQ layer, shared by the orchestrator and the worker core.
//!
//! - [`Broker`]: one connection, the queue topology (durable, dead-lettered, prefixed), channels.
//! - [`Publisher`]: persistent messages with publisher confirms, a whole batch per confirm round.
//! - [`next_batch`]: take what has arrived, up to a limit, never waiting to fill.
//! - [`Supervisor`]: keep a connection alive, reconnecting with jittered exponential backoff.
//! - [`DeadLetters`]: move a message that cannot be processed to the dead letters, with the reason.
//! - [`topology`]: the names of Tasker's queues.

mod batch;
pub mod dead;
mod publisher;
pub mod supervisor;
pub mod topology;

use std::time::Duration;

pub use lapin::message::Delivery;
pub use lapin::options::{BasicAckOptions, BasicNackOptions, BasicRejectOptions};
// `Subscription` and `Stopper` are defined below.
use lapin::options::{
    BasicConsumeOptions, BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions,
};
pub use lapin::types::{AMQPValue, FieldArray, FieldTable};
use lapin::{Channel, Connection, ConnectionProperties, Consumer, ExchangeKind};

pub use batch::{next_batch, until_any_ends};
pub use dead::DeadLetters;
pub use publisher::{Outgoing, Publisher, Round};
pub use supervisor::Supervisor;

/// A broker operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("AMQP: {0}")]
    Amqp(#[from] lapin::Error),
    #[error("the broker refused (nacked) {0} published message(s)")]
    Nacked(usize),
    #[error("the broker returned {0} unroutable message(s)")]
    Unroutable(usize),
    #[error("timed out connecting to the broker after {0:?}")]
    ConnectTimeout(Duration),
    /// Published, but not confirmed in time (a broker blocking publishers, say).
    #[error("no publisher confirm within {0:?}")]
    ConfirmTimeout(Duration),
    #[error("the CA file for amqps:// ({path}) cannot be read: {source}")]
    TlsCa {
        path: String,
        source: std::io::Error,
    },
    /// The broker did not answer a request (opening a channel, declaring a queue, ...) in time:
    /// the connection is treated as lost, so its owner reconnects instead of waiting forever.
    #[error("the broker did not answer {0} within {1:?}")]
    NoAnswer(&'static str, Duration),
    /// The connection or channel closed under a consumer or publisher.
    #[error("the broker connection closed")]
    Closed,
    /// The broker refused this connection's user something its permissions do not allow
    /// (`ACCESS_REFUSED`): retrying cannot help until an operator changes them.
    #[error("the broker refused {what} to user {user:?}: {message}")]
    Refused {
        what: String,
        user: String,
        message: String,
    },
    /// A queue exists with another type than `broker.queue_type` asks for (RabbitMQ cannot
    /// change a queue's type): drain and delete Tasker's queues, or use another
    /// `queue_prefix`, before switching.
    #[error(
        "the broker's queues are not {wanted} queues as broker.queue_type asks (a queue's type cannot change: drain and delete Tasker's queues, or use another queue_prefix, to switch): {message}"
    )]
    QueueType {
        wanted: &'static str,
        message: String,
    },
    /// A queue or exchange this connection may not declare itself does not exist yet: an
    /// orchestrator declares it (when a template of its namespace is registered).
    #[error("{0} does not exist yet on the broker; an orchestrator declares it")]
    Missing(String),
}

impl Error {
    /// The AMQP reply code of a channel or connection the broker closed (403 access refused,
    /// 404 not found, ...), if that is what this is.
    pub fn reply_code(&self) -> Option<u16> {
        match self {
            Error::Amqp(e) => match e.kind() {
                lapin::ErrorKind::ProtocolError(p) => Some(p.get_id()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the broker refused the user (bad permissions), which no retry can mend.
    pub fn is_refused(&self) -> bool {
        matches!(self, Error::Refused { .. }) || self.reply_code() == Some(ACCESS_REFUSED)
    }
}

/// AMQP reply codes Tasker tells apart.
const ACCESS_REFUSED: u16 = 403;
const NOT_FOUND: u16 = 404;

pub type Result<T> = std::result::Result<T, Error>;

/// One AMQP connection plus the naming of Tasker's queues.
#[derive(Debug, Clone)]
pub struct Broker {
    connection: std::sync::Arc<Connection>,
    prefix: String,
    /// The channels opened here, closed before the connection: a channel dropped just before
    /// the connection closes has lapin close it while the connection is already closing, which
    /// it logs as a connection error at every graceful shutdown.
    channels: std::sync::Arc<std::sync::Mutex<Vec<Channel>>>,
    /// The cancels of dropped subscriptions, awaited before their channels close.
    cancels: Cancels,
    /// The user this connection logged in as: every message it publishes carries it as its
    /// `user_id`, which RabbitMQ validates.
    user: String,
    /// Declare quorum queues (replicated over a cluster's nodes) rather than classic ones.
    quorum: bool,
}

/// With quorum queues, a message delivered this many times without being acknowledged (a
/// handler that kills its worker, again and again) goes to the dead letters instead of being
/// delivered once more.
pub const DELIVERY_LIMIT: i64 = 20;

/// AMQP's `PRECONDITION_FAILED`: a queue declared with arguments unlike the existing one's.
const PRECONDITION_FAILED: u16 = 406;

/// Where the next connection starts in a list of nodes: each connection starts one node
/// further, so the processes of a host spread over the nodes and a reconnect after a node's
/// loss tries another node first.
static NEXT_NODE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Tasks cancelling the consumers of dropped [`Subscription`]s. Left to lapin, a dropped
/// consumer is cancelled from a task of its own, which the close of its channel can overtake:
/// the broker then receives `basic.cancel` on a closed channel and fails the whole connection
/// (`CHANNEL_ERROR - expected 'channel.open'`), logged as an error at a graceful stop.
type Cancels = std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Broker {
    /// Connects to `url`, naming the connection `name` (visible in `rabbitmqctl list_connections`).
    /// `url` may list several nodes of a cluster, separated by commas: each is tried in turn
    /// until one accepts.
    pub async fn connect(url: &str, prefix: &str, name: &str) -> Result<Broker> {
        Self::connect_with(url, prefix, name, None).await
    }

    /// [`Broker::connect`], trusting the CA certificates of the PEM file `tls_ca` beside the
    /// built-in web roots when `url` is `amqps://` (read at each connection, so a renewed CA is
    /// picked up at the next reconnect).
    pub async fn connect_with(
        url: &str,
        prefix: &str,
        name: &str,
        tls_ca: Option<&std::path::Path>,
    ) -> Result<Broker> {
        let nodes: Vec<&str> = url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        // Processes start at different nodes too (by their pid).
        let first = (std::process::id() as usize)
            .wrapping_add(NEXT_NODE.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut failed = None;
        for i in 0..nodes.len() {
            let node = nodes[(first + i) % nodes.len()];
            match Self::connect_node(node, prefix, name, tls_ca).await {
                Ok(broker) => return Ok(broker),
                Err(e) if e.is_refused() => return Err(e),
                Err(e) => {
                    if nodes.len() > 1 {
                        tracing::warn!(node = %redact(node), error = %e, "broker node unreachable; trying the next");
                    }
                    failed = Some(e);
                }
            }
        }
        Err(failed.unwrap_or(Error::ConnectTimeout(Duration::ZERO)))
    }

    async fn connect_node(
        url: &str,
        prefix: &str,
        name: &str,
        tls_ca: Option<&std::path::Path>,
    ) -> Result<Broker> {
        let props = ConnectionProperties::default().with_connection_name(name.to_owned().into());
        let user = user_of(url);
        let tls = lapin::tcp::OwnedTLSConfig {
            identity: None,
            cert_chain: match tls_ca {
                Some(path) => {
                    Some(
                        std::fs::read_to_string(path).map_err(|source| Error::TlsCa {
                            path: path.display().to_string(),
                            source,
                        })?,
                    )
                }
                None => None,
            },
        };
        let timeout = Duration::from_secs(10);
        let connect = async {
            Connection::connect_with_config(url, props, tls, lapin::runtime::default_runtime()?)
                .await
        };
        let connection = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| Error::ConnectTimeout(timeout))??;
        Ok(Broker {
            connection: std::sync::Arc::new(connection),
            prefix: prefix.to_owned(),
            channels: std::sync::Arc::default(),
            cancels: Cancels::default(),
            user,
            quorum: false,
        })
    }

    /// Declares quorum queues (`broker.queue_type = "quorum"`) instead of classic ones.
    pub fn quorum(mut self, quorum: bool) -> Self {
        self.quorum = quorum;
        self
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The user this connection logged in as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.connection.status().connected()
    }

    /// Opens a channel. It stays open until it is closed, fails, or [`Broker::close`] closes
    /// it (dropping it does not close it while the broker is in use).
    pub async fn channel(&self) -> Result<Channel> {
        let channel = answered("channel.open", self.connection.create_channel()).await?;
        let mut open = lock(&self.channels);
        open.retain(|c| c.status().connected());
        open.push(channel.clone());
        Ok(channel)
    }

    /// Waits for the cancels of dropped subscriptions, closes the channels opened here, then
    /// the connection. Unacknowledged deliveries go back to their queues (at once, or when the
    /// broker notices the connection is gone). Each of the three steps gives up what the broker
    /// does not answer after [`ANSWER_TIMEOUT`], so a broker that stopped answering holds a
    /// close for at most three of them.
    pub async fn close(&self) {
        let cancels = std::mem::take(&mut *lock(&self.cancels));
        futures_util::future::join_all(cancels).await;
        let channels = std::mem::take(&mut *lock(&self.channels));
        if self.is_connected() {
            let closing = channels
                .iter()
                .filter(|c| c.status().connected())
                .map(|c| answered("channel.close", c.close(200, "bye".into())));
            futures_util::future::join_all(closing).await;
            let _ = answered("connection.close", self.connection.close(200, "bye".into())).await;
        }
    }

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
                exchange.into(),
                results.into(),
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
}

impl Broker {
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

/// `url` without its password, for logs.
fn redact(url: &str) -> String {
    match url.parse::<lapin::uri::AMQPUri>() {
        Ok(u) => format!(
            "{}://{}:{}",
            if url.starts_with("amqps") {
                "amqps"
            } else {
                "amqp"
            },
            u.authority.host,
            u.authority.port
        ),
        Err(_) => "(unparsable url)".to_owned(),
    }
}

/// The user an AMQP URL logs in as (`guest`, AMQP's default, when it names none).
pub fn user_of(url: &str) -> String {
    // A list of nodes logs in as its first node's user.
    let url = url.split(',').next().unwrap_or(url).trim();
    url.parse::<lapin::uri::AMQPUri>()
        .map(|u| u.authority.userinfo.username)
        .unwrap_or_else(|_| "guest".to_owned())
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

/// How long a request to the broker may wait for its answer. A connection the broker dropped
/// without lapin noticing (seen when RabbitMQ stopped under a worker: the close it sent never
/// completed) would otherwise hold its owner forever instead of letting it reconnect.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits a broker request, failing it with [`Error::NoAnswer`] after [`ANSWER_TIMEOUT`].
async fn answered<T>(
    what: &'static str,
    request: impl std::future::Future<Output = lapin::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(ANSWER_TIMEOUT, request).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(Error::NoAnswer(what, ANSWER_TIMEOUT)),
    }
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}
