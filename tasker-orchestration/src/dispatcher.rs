//! Publishes step messages to worker queues after their transaction committed. Shared by the
//! API (root steps), the result processor (ready children), retry timers and the sweeper.
//!
//! While the broker is unreachable, messages wait in memory and go out, in order, as soon as a
//! connection is attached again. The steps are already `enqueued` in the database, so if this
//! process dies first the sweeper re-publishes them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tasker_broker::{Broker, Outgoing, Publisher, topology};
use tasker_shared::StepMessage;

use crate::metrics as m;

/// Cheap cloneable handle.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    prefix: String,
    state: tokio::sync::Mutex<State>,
    backlog_len: Mutex<usize>,
}

#[derive(Debug, Default)]
struct State {
    link: Option<(Broker, Publisher)>,
    declared: HashSet<String>,
    backlog: Vec<Outgoing>,
}

impl Dispatcher {
    pub fn new(prefix: &str) -> Self {
        Self {
            inner: Arc::new(Inner {
                prefix: prefix.to_owned(),
                state: tokio::sync::Mutex::new(State::default()),
                backlog_len: Mutex::new(0),
            }),
        }
    }

    /// Publishes `messages` as one confirm round. Never fails: what cannot go out now waits
    /// for the next connection.
    pub async fn publish(&self, messages: &[StepMessage]) {
        if messages.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(messages.len());
        let mut namespaces: Vec<&str> = Vec::new();
        for m in messages {
            match serde_json::to_vec(m) {
                Ok(payload) => out.push(Outgoing {
                    queue: topology::steps_queue(&self.inner.prefix, &m.namespace),
                    payload,
                }),
                Err(e) => {
                    tracing::error!(step = %m.step_id, error = %e, "cannot encode step message")
                }
            }
            if !namespaces.contains(&m.namespace.as_str()) {
                namespaces.push(&m.namespace);
            }
        }
        let mut state = self.inner.state.lock().await;
        let link = state.link.clone();
        let Some((broker, publisher)) = link else {
            state.backlog.extend(out);
            self.set_backlog(state.backlog.len());
            return;
        };
        let missing: Vec<String> = namespaces
            .into_iter()
            .filter(|ns| !state.declared.contains(*ns))
            .map(str::to_owned)
            .collect();
        if !missing.is_empty() {
            if let Err(e) = broker.declare(&missing).await {
                tracing::warn!(error = %e, "declaring step queues failed; will retry on reconnect");
                state.backlog.extend(out);
                self.set_backlog(state.backlog.len());
                return;
            }
            state.declared.extend(missing);
        }
        // Release the lock while waiting for confirms so other publishers are not serialized
        // behind this round trip.
        drop(state);
        match publisher.publish_all(&out).await {
            Ok(()) => {
                metrics::counter!(m::STEPS_DISPATCHED.name).increment(out.len() as u64);
            }
            Err(e) => {
                tracing::warn!(error = %e, count = out.len(), "publish failed; keeping messages for the next connection");
                let mut state = self.inner.state.lock().await;
                state.backlog.extend(out);
                self.set_backlog(state.backlog.len());
            }
        }
    }

    /// Uses a (new) connection: declares the namespaces given, then flushes the backlog.
    pub async fn attach(
        &self,
        broker: Broker,
        namespaces: &[String],
    ) -> Result<(), tasker_broker::Error> {
        broker.declare(namespaces).await?;
        let publisher = broker.publisher().await?;
        let mut state = self.inner.state.lock().await;
        let backlog = std::mem::take(&mut state.backlog);
        if !backlog.is_empty() {
            tracing::info!(count = backlog.len(), "publishing backlog after reconnect");
            if let Err(e) = publisher.publish_all(&backlog).await {
                state.backlog = backlog;
                return Err(e);
            }
        }
        self.set_backlog(0);
        state.declared = namespaces.iter().cloned().collect();
        state.link = Some((broker, publisher));
        Ok(())
    }

    /// Forgets the current connection (it failed); publishes wait for the next one.
    pub async fn detach(&self) {
        self.inner.state.lock().await.link = None;
    }

    /// Messages waiting for a connection.
    pub fn backlog(&self) -> usize {
        *self
            .inner
            .backlog_len
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn set_backlog(&self, n: usize) {
        *self
            .inner
            .backlog_len
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = n;
        metrics::gauge!(m::DISPATCH_BACKLOG.name).set(n as f64);
    }
}
