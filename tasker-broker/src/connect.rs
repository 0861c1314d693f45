//! Connecting: a URL (or a cluster's list of nodes, each tried in turn) to a [`Broker`], its
//! channels, and closing them all in order.

use std::time::Duration;

use lapin::{Channel, Connection, ConnectionProperties};

use crate::error::{Error, Result};

/// One AMQP connection plus the naming of Tasker's queues.
#[derive(Debug, Clone)]
pub struct Broker {
    pub(crate) connection: std::sync::Arc<Connection>,
    pub(crate) prefix: String,
    /// The channels opened here, closed before the connection: a channel dropped just before
    /// the connection closes has lapin close it while the connection is already closing, which
    /// it logs as a connection error at every graceful shutdown.
    pub(crate) channels: std::sync::Arc<std::sync::Mutex<Vec<Channel>>>,
    /// The cancels of dropped subscriptions, awaited before their channels close.
    pub(crate) cancels: Cancels,
    /// The user this connection logged in as: every message it publishes carries it as its
    /// `user_id`, which RabbitMQ validates.
    pub(crate) user: String,
    /// Declare quorum queues (replicated over a cluster's nodes) rather than classic ones.
    pub(crate) quorum: bool,
}

/// Tasks cancelling the consumers of dropped [`Subscription`](crate::Subscription)s. Left to lapin, a dropped
/// consumer is cancelled from a task of its own, which the close of its channel can overtake:
/// the broker then receives `basic.cancel` on a closed channel and fails the whole connection
/// (`CHANNEL_ERROR - expected 'channel.open'`), logged as an error at a graceful stop.
pub(crate) type Cancels = std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Broker {
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
}

/// How long a request to the broker may wait for its answer. A connection the broker dropped
/// without lapin noticing (seen when RabbitMQ stopped under a worker: the close it sent never
/// completed) would otherwise hold its owner forever instead of letting it reconnect.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits a broker request, failing it with [`Error::NoAnswer`] after [`ANSWER_TIMEOUT`].
pub(crate) async fn answered<T>(
    what: &'static str,
    request: impl std::future::Future<Output = lapin::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(ANSWER_TIMEOUT, request).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(Error::NoAnswer(what, ANSWER_TIMEOUT)),
    }
}

/// Where the next connection starts in a list of nodes: each connection starts one node
/// further, so the processes of a host spread over the nodes and a reconnect after a node's
/// loss tries another node first.
static NEXT_NODE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

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
}

/// `url` without its user and password, for logs and errors.
pub fn redact(url: &str) -> String {
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
