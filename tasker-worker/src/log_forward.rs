//! The core's logs, for a worker embedded in another language: instead of writing lines to
//! stderr beside the host's own, every event (filtered by `RUST_LOG`, `info` by default) is
//! queued as a [`LogRecord`], and the binding drains the queue into the host's logger — Python
//! `logging`, a Ruby `Logger`, Node's `console` — on a thread (or task) of its own, so the host
//! language is only ever called from its own threads.
//!
//! The queue is bounded: if the host does not drain it, the newest records are dropped and
//! counted, and the next record drained says how many were lost.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Records kept while nobody drains them.
const QUEUE_MAX: usize = 10_000;

/// One log event of the core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogRecord {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: &'static str,
    /// The Rust module that logged it (`tasker_worker::worker`).
    pub target: String,
    /// The event's message.
    pub message: String,
    /// The event's other fields (`count = 3` is `{"count": 3}`), apart from the message: a host
    /// logger writes them as ` key=value` after a text line's message, or at the top level of a
    /// JSON line. Left out of the JSON when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, serde_json::Value>,
}

/// Where the core's log records wait for the binding.
#[derive(Debug, Default)]
pub struct LogQueue {
    state: Mutex<Queued>,
    ready: Condvar,
    ready_async: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Queued {
    records: VecDeque<LogRecord>,
    dropped: u64,
}

impl LogQueue {
    fn push(&self, record: LogRecord) {
        let mut q = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if q.records.len() >= QUEUE_MAX {
            q.dropped += 1;
            return;
        }
        q.records.push_back(record);
        drop(q);
        self.ready.notify_one();
        self.ready_async.notify_waiters();
    }

    fn take(&self, q: &mut Queued, max: usize) -> Vec<LogRecord> {
        let mut out = Vec::new();
        if q.dropped > 0 {
            out.push(LogRecord {
                level: "WARN",
                target: module_path!().to_owned(),
                message: format!(
                    "{} log records were dropped: nothing drained them in time",
                    q.dropped
                ),
                fields: BTreeMap::from([("dropped".to_owned(), q.dropped.into())]),
            });
            q.dropped = 0;
        }
        let n = max.max(1).saturating_sub(out.len()).min(q.records.len());
        out.extend(q.records.drain(..n));
        out
    }

    /// Waits up to `timeout` for records and returns up to `max` of them (none if the wait ran
    /// out). Call it with the GIL/GVL released.
    pub fn next_batch(&self, max: usize, timeout: Duration) -> Vec<LogRecord> {
        let deadline = Instant::now() + timeout;
        let mut q = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while q.records.is_empty() && q.dropped == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Vec::new();
            }
            q = self
                .ready
                .wait_timeout(q, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        self.take(&mut q, max)
    }

    /// [`LogQueue::next_batch`] for event-loop languages.
    pub async fn next_batch_async(&self, max: usize, timeout: Duration) -> Vec<LogRecord> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.ready_async.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut q = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if !q.records.is_empty() || q.dropped > 0 {
                    return self.take(&mut q, max);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }
}

/// Routes the core's logs to the queue the binding drains, and returns it. The first call
/// installs the process's log subscriber; later calls return the same queue. If another
/// subscriber was installed first (the host's own Rust code), records go there instead and the
/// queue stays empty.
pub fn forward(default_filter: &str) -> &'static LogQueue {
    static QUEUE: OnceLock<&'static LogQueue> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let queue: &'static LogQueue = Box::leak(Box::default());
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(tasker_shared::logging::default_filter(
                default_filter,
            ))
        });
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(Forward(queue))
            .try_init();
        queue
    })
}

/// The layer that turns events into [`LogRecord`]s.
struct Forward(&'static LogQueue);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Forward {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let meta = event.metadata();
        self.0.push(LogRecord {
            level: meta.level().as_str(),
            target: meta.target().to_owned(),
            message: text.message,
            fields: text.fields,
        });
    }
}

/// An event's `message` and its other fields, numbers and booleans kept as such.
#[derive(Default)]
struct Text {
    message: String,
    fields: BTreeMap<String, serde_json::Value>,
}

impl Text {
    fn field(&mut self, field: &Field, value: serde_json::Value) {
        self.fields.insert(field.name().to_owned(), value);
    }
}

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.field(field, value.into());
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.field(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.field(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.field(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.field(field, value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.field(field, format!("{value:?}").into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_wait_in_order_and_a_full_queue_says_what_it_dropped() {
        let q = LogQueue::default();
        assert!(q.next_batch(10, Duration::from_millis(10)).is_empty());
        for i in 0..QUEUE_MAX + 3 {
            q.push(LogRecord {
                level: "INFO",
                target: "t".into(),
                message: format!("m{i}"),
                fields: BTreeMap::new(),
            });
        }
        let first = q.next_batch(2, Duration::from_secs(1));
        assert_eq!(first[0].level, "WARN");
        assert!(first[0].message.starts_with("3 log records were dropped"));
        assert_eq!(first[1].message, "m0");
        let next = q.next_batch(1, Duration::from_secs(1));
        assert_eq!(next[0].message, "m1");
    }

    #[test]
    fn an_event_becomes_its_message_and_fields() {
        let q: &'static LogQueue = Box::leak(Box::default());
        let subscriber = tracing_subscriber::registry().with(Forward(q));
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(count = 3, name = "x", "publish failed");
        });
        let got = q.next_batch(10, Duration::from_secs(1));
        assert_eq!(
            got,
            vec![LogRecord {
                level: "WARN",
                target: module_path!().to_owned(),
                message: "publish failed".into(),
                fields: BTreeMap::from([
                    ("count".to_owned(), 3.into()),
                    ("name".to_owned(), "x".into()),
                ]),
            }]
        );
    }
}
