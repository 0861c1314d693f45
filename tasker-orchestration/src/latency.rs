//! `tasker_task_seconds`: a finished task's end-to-end latency, by namespace, template and state.
//! The engine announces a finished task by its id and state alone; its template and times are
//! read here, for the tasks that finished within a second together, in one query by primary key
//! and off the path that announces them (a read for every result batch cost the saturated
//! throughput about a tenth, measured).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::metrics as m;
use crate::store::Store;

/// How long finished tasks are gathered before their latencies are read.
const GATHER: Duration = Duration::from_secs(1);
/// At most this many tasks a read.
const MAX_READ: usize = 10_000;

/// Where the executor hands finished tasks; cheap to clone.
#[derive(Debug, Clone)]
pub struct TaskLatency {
    tx: mpsc::UnboundedSender<Uuid>,
}

impl TaskLatency {
    /// Starts the reader; it stops with `shutdown` (tasks not yet read are not recorded).
    pub fn start(store: Store, shutdown: CancellationToken) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(store, rx, shutdown));
        TaskLatency { tx }
    }

    /// Tasks that reached a terminal state.
    pub fn finished(&self, ids: impl IntoIterator<Item = Uuid>) {
        for id in ids {
            // Err: the reader stopped with the orchestrator; nothing to record then.
            let _ = self.tx.send(id);
        }
    }
}

async fn run(store: Store, mut rx: mpsc::UnboundedReceiver<Uuid>, shutdown: CancellationToken) {
    loop {
        let first = tokio::select! {
            _ = shutdown.cancelled() => return,
            first = rx.recv() => first,
        };
        let Some(first) = first else { return };
        let mut ids = vec![first];
        let until = tokio::time::Instant::now() + GATHER;
        while ids.len() < MAX_READ {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(id)) => ids.push(id),
                Ok(None) | Err(_) => break,
            }
        }
        match store.task_latencies(&ids).await {
            Ok(rows) => {
                for (namespace, template, state, seconds) in rows {
                    ::metrics::histogram!(m::TASK_SECONDS.name,
                        "namespace" => namespace, "template" => template, "state" => state)
                    .record(seconds);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, tasks = ids.len(), "metrics: cannot read finished tasks' latency");
            }
        }
    }
}
