//! What a broker operation can fail with, and the AMQP reply codes Tasker tells apart.

use std::time::Duration;

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
pub(crate) const ACCESS_REFUSED: u16 = 403;
pub(crate) const NOT_FOUND: u16 = 404;

pub type Result<T> = std::result::Result<T, Error>;

/// AMQP's `PRECONDITION_FAILED`: a queue declared with arguments unlike the existing one's.
pub(crate) const PRECONDITION_FAILED: u16 = 406;
