//! Publishes step messages to worker queues after their transaction committed. Shared by the
//! API (root steps), the result processor (ready children), retry timers and the sweeper, all
//! through [`crate::executor::execute`].
//!
//! While the broker is unreachable, or does not confirm a round in time, messages wait in
//! memory (up to a bound) and go out, in order, as soon as a connection is attached again, or at
//! the next sweep on the connection there is ([`Dispatcher::flush`]): a round that failed on a
//! connection already replaced, or while the broker blocked publishers, never waits for a
//! reconnect that may not come. The
//! steps are already `enqueued` in the database, recording this orchestrator as their
//! dispatcher, so if this process dies first (it stops heartbeating), or the bound is reached
//! (the dropped steps are released), the sweeper re-publishes them after the visibility timeout. A message too large to
//! send is never sent: its step is handed back to fail on its own.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_broker::{Broker, Outgoing, Publisher};
use tasker_shared::StepMessage;
use tasker_shared::config::OrchestratorConfig;

use crate::metrics as m;
use crate::store::Store;

mod round;

use round::Round;

/// A step attempt whose message went out.
type Attempt = (Uuid, u32);

/// Cheap cloneable handle.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    prefix: String,
    limits: Limits,
    state: tokio::sync::Mutex<State>,
    backlog_len: Mutex<usize>,
    /// Attempts dropped from a full backlog, for [`release_dropped`] to hand to the sweeper.
    dropped: mpsc::UnboundedSender<Vec<Attempt>>,
    dropped_rx: Mutex<Option<mpsc::UnboundedReceiver<Vec<Attempt>>>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Limits {
    max_message_bytes: usize,
    steps_per_message: usize,
    publish_timeout: Duration,
    backlog_max: usize,
}

#[derive(Debug, Default)]
struct State {
    link: Option<(Broker, Publisher)>,
    /// Bumped whenever `link` is replaced: a round that failed on an older link goes out on the
    /// current one at once.
    generation: u64,
    declared: HashSet<String>,
    /// Packed messages with the step attempts each carries.
    backlog: VecDeque<(Outgoing, Vec<Attempt>)>,
}

/// A step whose message could not be sent at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub message: StepMessage,
    pub bytes: usize,
}

impl Dispatcher {
    pub fn new(prefix: &str, config: &OrchestratorConfig) -> Self {
        let (dropped, dropped_rx) = mpsc::unbounded_channel();
        Self {
            inner: Arc::new(Inner {
                prefix: prefix.to_owned(),
                limits: Limits {
                    max_message_bytes: config.max_message_bytes,
                    steps_per_message: config.steps_per_message,
                    publish_timeout: Duration::from_millis(config.publish_timeout_ms),
                    backlog_max: config.dispatch_backlog_max,
                },
                state: tokio::sync::Mutex::new(State::default()),
                backlog_len: Mutex::new(0),
                dropped,
                dropped_rx: Mutex::new(Some(dropped_rx)),
            }),
        }
    }

    /// The stream of attempts dropped from a full backlog; the first caller gets it.
    pub fn take_dropped(&self) -> Option<mpsc::UnboundedReceiver<Vec<Attempt>>> {
        self.inner
            .dropped_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Publishes `messages` as one confirm round, packed into batches (one broker message per
    /// up to `steps_per_message` steps of one namespace). What cannot go out now waits for the
    /// next connection; what can never go out (one step's message larger than
    /// `max_message_bytes`) is returned.
    pub async fn publish(&self, messages: &[StepMessage]) -> Vec<Refused> {
        if messages.is_empty() {
            return Vec::new();
        }
        let limits = &self.inner.limits;
        // The dispatch spans (tracing on) end with this call, once the round is confirmed.
        let Round {
            out,
            carried,
            namespaces,
            refused,
            spans: _spans,
        } = Round::pack(&self.inner.prefix, limits, messages);
        if out.is_empty() {
            return refused;
        }
        let mut state = self.inner.state.lock().await;
        let Some((broker, publisher)) = state.link.clone() else {
            self.park(&mut state, out, carried);
            return refused;
        };
        let generation = state.generation;
        if let Err(e) = Self::declare_missing(&mut state, &broker, &namespaces).await {
            tracing::warn!(error = %e, "declaring step queues failed; will retry on reconnect");
            self.park(&mut state, out, carried);
            return refused;
        }
        // Release the lock while waiting for confirms so other publishers are not serialized
        // behind this round trip.
        drop(state);
        let steps: usize = carried.iter().map(Vec::len).sum();
        let sent = tokio::time::timeout(limits.publish_timeout, publisher.publish_all(&out)).await;
        let failure = match sent {
            Ok(Ok(())) => {
                metrics::counter!(m::STEPS_DISPATCHED.name).increment(steps as u64);
                metrics::histogram!(m::DISPATCH_ROUND_STEPS.name).record(steps as f64);
                return refused;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "no confirm within {} ms (is the broker blocking publishers?)",
                limits.publish_timeout.as_millis()
            ),
        };
        tracing::warn!(error = %failure, count = steps, "publish failed; keeping the messages for later");
        self.keep_failed_round(&publisher, out, carried, generation)
            .await;
        refused
    }

    /// Declares the steps queues of `namespaces` this connection has not declared yet.
    async fn declare_missing(
        state: &mut State,
        broker: &Broker,
        namespaces: &[&str],
    ) -> Result<(), tasker_broker::Error> {
        let missing: Vec<String> = namespaces
            .iter()
            .filter(|ns| !state.declared.contains(**ns))
            .map(|ns| (*ns).to_owned())
            .collect();
        if !missing.is_empty() {
            broker.declare(&missing).await?;
            state.declared.extend(missing);
        }
        Ok(())
    }

    /// Parks a round that failed on `publisher` for the next try, on a fresh channel if the
    /// broker closed this one, at once if a connection was attached meanwhile.
    async fn keep_failed_round(
        &self,
        publisher: &Publisher,
        out: Vec<Outgoing>,
        carried: Vec<Vec<Attempt>>,
        generation: u64,
    ) {
        let mut state = self.inner.state.lock().await;
        // The broker closes a channel over one bad publish while the connection lives on: take
        // a fresh channel now instead of waiting for the connection to fail.
        if !publisher.is_open()
            && let Some((broker, current)) = state.link.clone()
            && !current.is_open()
        {
            match broker.publisher().await {
                Ok(fresh) => {
                    state.link = Some((broker, fresh));
                    state.generation += 1;
                }
                Err(e) => tracing::warn!(error = %e, "cannot open a new publishing channel"),
            }
        }
        self.park(&mut state, out, carried);
        // A connection (or channel) attached while this round was in flight has already
        // flushed the backlog without it: send it there now.
        if state.generation != generation {
            self.flush_locked(&mut state).await;
        }
    }

    /// Publishes what waits in the backlog on the current connection, if there is one (the
    /// sweeper calls it on every pass). What fails stays, in order, for the next try.
    pub async fn flush(&self) {
        let mut state = self.inner.state.lock().await;
        self.flush_locked(&mut state).await;
    }

    async fn flush_locked(&self, state: &mut State) {
        let Some((_, publisher)) = state.link.clone() else {
            return;
        };
        if state.backlog.is_empty() {
            return;
        }
        if let Err(e) = self.publish_backlog(state, &publisher).await {
            tracing::warn!(error = %e, backlog = self.backlog(), "publishing the backlog failed; it waits for the next try");
        }
    }

    /// Sends the backlog as one confirm round, confirmed within the publish timeout like any
    /// round (a broker that takes the messages but never confirms fails it instead of holding
    /// every publisher); on failure puts it back.
    async fn publish_backlog(
        &self,
        state: &mut State,
        publisher: &Publisher,
    ) -> Result<(), tasker_broker::Error> {
        let timeout = self.inner.limits.publish_timeout;
        let (backlog, attempts): (Vec<Outgoing>, Vec<Vec<Attempt>>) =
            state.backlog.drain(..).unzip();
        if backlog.is_empty() {
            return Ok(());
        }
        tracing::info!(count = backlog.len(), "publishing the dispatch backlog");
        let sent = tokio::time::timeout(timeout, publisher.publish_all(&backlog))
            .await
            .unwrap_or(Err(tasker_broker::Error::ConfirmTimeout(timeout)));
        match sent {
            Ok(()) => {
                let steps: usize = attempts.iter().map(Vec::len).sum();
                metrics::counter!(m::STEPS_DISPATCHED.name).increment(steps as u64);
                self.set_backlog(0);
                Ok(())
            }
            Err(e) => {
                // Anything parked meanwhile could not be: this holds the lock. Back in order.
                state.backlog = backlog.into_iter().zip(attempts).collect();
                Err(e)
            }
        }
    }

    /// Keeps messages for the next connection, up to the bound (in steps); beyond it the
    /// oldest are left to the sweeper (their steps are `enqueued` in the database).
    fn park(&self, state: &mut State, out: Vec<Outgoing>, carried: Vec<Vec<Attempt>>) {
        state.backlog.extend(out.into_iter().zip(carried));
        let mut steps: usize = state.backlog.iter().map(|(_, a)| a.len()).sum();
        let mut dropped: Vec<Attempt> = Vec::new();
        while steps > self.inner.limits.backlog_max {
            let Some((_, attempts)) = state.backlog.pop_front() else {
                break;
            };
            steps -= attempts.len();
            dropped.extend(attempts);
        }
        if !dropped.is_empty() {
            metrics::counter!(m::DISPATCH_DROPPED.name).increment(dropped.len() as u64);
            tracing::warn!(
                dropped = dropped.len(),
                "dispatch backlog full; the sweeper will re-publish those steps"
            );
            let _ = self.inner.dropped.send(dropped);
        }
        self.set_backlog(steps);
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
        self.publish_backlog(&mut state, &publisher).await?;
        state.declared = namespaces.iter().cloned().collect();
        state.link = Some((broker, publisher));
        state.generation += 1;
        Ok(())
    }

    /// Declares `namespace`'s steps queue now, if this connection has not yet (a template of
    /// it was just registered: its workers may only check that the queue exists). Without a
    /// connection it is declared when one is attached; a failure is logged, and publishing
    /// declares it again.
    pub async fn declare(&self, namespace: &str) {
        let mut state = self.inner.state.lock().await;
        if state.declared.contains(namespace) {
            return;
        }
        let Some((broker, _)) = state.link.clone() else {
            return;
        };
        match broker.declare(&[namespace.to_owned()]).await {
            Ok(()) => {
                state.declared.insert(namespace.to_owned());
            }
            Err(e) => tracing::warn!(%namespace, error = %e, "declaring a steps queue failed"),
        }
    }

    /// Publishes one message now (a dead letter replayed) with `headers`, confirmed within the
    /// publish timeout; unlike [`Self::publish`] it never waits for a connection.
    pub async fn send_now(
        &self,
        message: Outgoing,
        headers: tasker_broker::FieldTable,
    ) -> Result<(), String> {
        let link = self.inner.state.lock().await.link.clone();
        let Some((_, publisher)) = link else {
            return Err("not connected to the broker".into());
        };
        let timeout = self.inner.limits.publish_timeout;
        let sent = publisher.publish_with_headers(&message.queue, &message.payload, headers);
        match tokio::time::timeout(timeout, sent).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no confirm within {} ms", timeout.as_millis())),
        }
    }

    /// Forgets the current connection (it failed); publishes wait for the next one.
    pub async fn detach(&self) {
        self.inner.state.lock().await.link = None;
    }

    /// Steps waiting for a connection.
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

/// Hands steps dropped from a full backlog to the sweeper (clears their `dispatched_by`), in
/// batches formed by load, until cancelled.
pub(crate) async fn release_dropped(
    store: Store,
    mut dropped: mpsc::UnboundedReceiver<Vec<Attempt>>,
    cancel: CancellationToken,
) {
    let mut arrivals = futures_util::stream::poll_fn(|cx| dropped.poll_recv(cx));
    loop {
        let batch = tokio::select! {
            () = cancel.cancelled() => return,
            b = tasker_broker::next_batch(&mut arrivals, 256) => b,
        };
        let Some(batch) = batch else { return };
        let attempts: Vec<Attempt> = batch.into_iter().flatten().collect();
        if let Err(e) = store.release(&attempts).await {
            tracing::warn!(error = %e, count = attempts.len(),
                "handing dropped steps to the sweeper failed; they go out when this orchestrator stops");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};
    use uuid::Uuid;

    fn message(context: serde_json::Value) -> StepMessage {
        StepMessage {
            task_id: Uuid::now_v7(),
            step_id: Uuid::now_v7(),
            namespace: "n".into(),
            task_name: "t".into(),
            step_name: "s".into(),
            handler: "h".into(),
            attempt: 1,
            max_attempts: 1,
            context,
            parent_results: Map::new(),
            context_by_reference: false,
            parent_results_by_reference: false,
            input: None,
            dispatched_at: chrono::Utc::now(),
            timeout_ms: 1_000,
            queue_timeout_ms: None,
            traceparent: None,
            priority: None,
            resent: false,
        }
    }

    fn dispatcher(max_message_bytes: usize, backlog_max: usize) -> Dispatcher {
        let config = OrchestratorConfig {
            max_message_bytes,
            steps_per_message: 1,
            dispatch_backlog_max: backlog_max,
            ..OrchestratorConfig::default()
        };
        Dispatcher::new("test", &config)
    }

    #[tokio::test]
    async fn without_a_connection_messages_wait_up_to_the_bound() {
        let d = dispatcher(1 << 20, 3);
        let batch: Vec<StepMessage> = (0..5).map(|i| message(json!({ "i": i }))).collect();
        assert!(d.publish(&batch).await.is_empty());
        assert_eq!(d.backlog(), 3, "the oldest are left to the sweeper");
        let kept: Vec<Vec<u8>> = d
            .inner
            .state
            .lock()
            .await
            .backlog
            .iter()
            .map(|(o, _)| o.payload.clone())
            .collect();
        let third: Vec<StepMessage> = tasker_shared::message::decode_batch(&kept[0]).unwrap();
        assert_eq!(third, vec![batch[2].clone()]);
    }

    #[tokio::test]
    async fn steps_of_one_namespace_travel_together_up_to_the_limit() {
        let config = OrchestratorConfig {
            steps_per_message: 2,
            ..OrchestratorConfig::default()
        };
        let d = Dispatcher::new("test", &config);
        let mut batch: Vec<StepMessage> = (0..5).map(|i| message(json!({ "i": i }))).collect();
        batch[1].namespace = "other".into();
        assert!(d.publish(&batch).await.is_empty());
        let state = d.inner.state.lock().await;
        let packed: Vec<(String, usize)> = state
            .backlog
            .iter()
            .map(|(o, a)| (o.queue.clone(), a.len()))
            .collect();
        assert_eq!(
            packed,
            vec![
                ("test.steps.n".to_owned(), 2),
                ("test.steps.n".to_owned(), 2),
                ("test.steps.other".to_owned(), 1)
            ]
        );
        assert_eq!(d.backlog(), 5);
    }

    #[tokio::test]
    async fn a_message_over_the_limit_is_refused_not_sent() {
        let d = dispatcher(2_000, 10);
        let small = message(json!({ "v": 1 }));
        let big = message(json!({ "pad": "x".repeat(5_000) }));
        let refused = d.publish(&[small, big.clone()]).await;
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].message, big);
        assert!(refused[0].bytes > 5_000);
        assert_eq!(d.backlog(), 1, "the small one waits for a connection");
    }
}
