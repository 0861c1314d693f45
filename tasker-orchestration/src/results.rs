//! The result processor: consumes the results queue in batches formed by load (what has
//! arrived, up to a limit), applies each batch in one transaction, publishes the steps it made
//! ready, then acknowledges the batch.

use std::time::{Duration, SystemTime};

use serde_json::value::RawValue;
use tasker_broker::{BasicAckOptions, Broker, DeadLetters, Delivery, topology};
use tasker_shared::message::decode_batch;
use tasker_shared::{Outcome, StepResult};
use tokio_util::sync::CancellationToken;

use crate::effects::Effects;
use crate::executor;
use crate::metrics as m;
use crate::senders::{Permit, Sender};
use crate::shared::Shared;
use crate::store::{self, Held};

mod incoming;

use incoming::{Head, Incoming};

/// Runs until cancelled (`Ok`) or the broker connection fails (`Err`). Up to
/// `orchestrator.result_appliers` batches are applied at once, each on a connection kept for
/// it; the next batch is taken as soon as one of them is free.
pub(crate) async fn run(
    shared: &Shared,
    broker: &Broker,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let cfg = &shared.config.orchestrator;
    let queue = topology::results_queue(&shared.config.queue_prefix);
    let tag = format!("orchestrator-{}", std::process::id());
    let mut consumer = broker.consume(&queue, &tag, cfg.result_prefetch).await?;
    let dead = DeadLetters::new(broker.clone());
    let appliers = cfg.result_appliers.max(1);
    let (free, mut idle) = tokio::sync::mpsc::channel::<Held>(appliers);
    for _ in 0..appliers {
        let _ = free.try_send(shared.store.held());
    }
    let (failed, mut failure) = tokio::sync::mpsc::channel(appliers);
    loop {
        let held = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            Some(e) = failure.recv() => return Err(e),
            Some(held) = idle.recv() => held,
        };
        let batch = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            Some(e) = failure.recv() => return Err(e),
            b = tasker_broker::next_batch(&mut consumer, cfg.result_batch_max) => b,
        };
        let deliveries = batch
            .ok_or(tasker_broker::Error::Closed)?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let applier = Applier {
            held,
            free: free.clone(),
            failed: failed.clone(),
        };
        process(shared, applier, &dead, deliveries, cancel);
    }
}

/// A connection to apply one batch on, given back once the batch is applied; an error that
/// ends the session is reported on `failed`.
struct Applier {
    held: Held,
    free: tokio::sync::mpsc::Sender<Held>,
    failed: tokio::sync::mpsc::Sender<tasker_broker::Error>,
}

/// Applies a batch, then publishes what it made ready and settles its messages. That work runs
/// on a task of its own, which this session does not own: when the session ends (its broker
/// connection failed and the other consumer's error ends it) while a transaction is in flight,
/// a commit still has its consequences published. Dropped with the session instead, a batch
/// committed at that moment left the steps it made ready `enqueued` with no message, and since
/// this orchestrator lived on (heartbeating), the sweeper never sent them (seen in the fault
/// suite as a task that never finished after RabbitMQ restarted). The connection is free for
/// the next batch once this one is applied, while its steps are being published.
fn process(
    shared: &Shared,
    applier: Applier,
    dead: &DeadLetters,
    deliveries: Vec<Delivery>,
    cancel: &CancellationToken,
) {
    let (shared, dead, cancel) = (shared.clone(), dead.clone(), cancel.clone());
    tokio::spawn(async move {
        let Applier {
            mut held,
            free,
            failed,
        } = applier;
        let applied = apply(&shared, &mut held, &dead, &deliveries, &cancel).await;
        let _ = free.send(held).await;
        let (effects, fate) = match applied {
            Ok(Some(done)) => done,
            Ok(None) => return,
            Err(e) => {
                let _ = failed.send(e).await;
                return;
            }
        };
        // The results are acked once their consequences are published (if this process dies
        // first, they are redelivered and ignored as duplicates, and the sweeper re-publishes
        // the committed steps).
        executor::execute(&shared, effects).await;
        for (d, fate) in deliveries.iter().zip(fate) {
            let settled = match fate {
                Fate::Settled => continue,
                Fate::Dead { reason, sender } => {
                    dead.bury_from(d, &reason, sender.as_deref()).await
                }
                Fate::Ack => d
                    .ack(BasicAckOptions::default())
                    .await
                    .map(drop)
                    .map_err(Into::into),
            };
            if let Err(e) = settled {
                tracing::debug!(error = %e, "settling a result message failed (connection lost?); \
                    it will be redelivered");
            }
        }
    });
}

/// The results of a batch of messages: each message carries one or many results, kept as the
/// worker's JSON text; `from[i]` is the message of `results[i]`, `fate[m]` what becomes of
/// message `m` once its results are applied, `senders[m]` who sent it.
struct Batch<'a> {
    results: Vec<Incoming<'a>>,
    from: Vec<usize>,
    fate: Vec<Fate>,
    senders: Vec<Sender>,
}

impl<'a> Batch<'a> {
    /// Reads every message; a malformed one goes to the dead letters at once.
    async fn read(
        deliveries: &'a [Delivery],
        dead: &DeadLetters,
    ) -> Result<Batch<'a>, tasker_broker::Error> {
        let mut batch = Batch {
            results: Vec::with_capacity(deliveries.len()),
            from: Vec::with_capacity(deliveries.len()),
            fate: vec![Fate::Ack; deliveries.len()],
            senders: Vec::new(),
        };
        for (at, d) in deliveries.iter().enumerate() {
            match decode_batch::<&RawValue>(&d.data).and_then(|raw| {
                if raw.is_empty() {
                    // Acked, it would change nothing; left unsettled, enough of them would
                    // hold every slot of the consumer's prefetch.
                    return Err(serde::de::Error::custom("it carries no results (`[]`)"));
                }
                raw.into_iter()
                    .map(Incoming::read)
                    .collect::<Result<Vec<_>, _>>()
            }) {
                Ok(results) => {
                    batch.from.extend(std::iter::repeat_n(at, results.len()));
                    batch.results.extend(results);
                }
                Err(e) => {
                    metrics::counter!(m::RESULTS_MALFORMED.name).increment(1);
                    tracing::warn!(error = %e, "malformed result message; dead-lettering it");
                    dead.bury(d, &format!("malformed result message: {e}"))
                        .await?;
                    batch.fate[at] = Fate::Settled;
                }
            }
        }
        Ok(batch)
    }

    /// What result `i`'s sender may move.
    fn permits(&self) -> Vec<Permit> {
        self.from
            .iter()
            .map(|&m| self.senders[m].permit.clone())
            .collect()
    }

    /// Sends result `i`'s message to the dead letters with `reason` (with the reasons of its
    /// other results that went wrong, if any).
    fn condemn(&mut self, i: usize, reason: String) {
        let m = self.from[i];
        let sender = self.senders[m].name.clone();
        self.fate[m] = match std::mem::replace(&mut self.fate[m], Fate::Ack) {
            Fate::Dead {
                reason: earlier, ..
            } => Fate::Dead {
                reason: format!("{earlier}; {reason}"),
                sender,
            },
            _ => Fate::Dead { reason, sender },
        };
    }

    /// A result that matched no step in flight, or moved a step of a namespace its sender may
    /// not serve, changed nothing: its message goes to the dead letters with the reason.
    fn reject(&mut self, applied: &Effects) {
        let Some(counts) = &applied.results else {
            return;
        };
        for r in &counts.rejected {
            let head = &self.results[r.index].head;
            let sender = self.senders[self.from[r.index]]
                .name
                .clone()
                .unwrap_or_else(|| "(no user_id)".into());
            tracing::warn!(code = %r.code, detail = %r.detail, %sender, step = %head.step_id,
                task = %head.task_id, attempt = head.attempt,
                "a result was rejected; dead-lettering its message");
            let reason = format!("{}: {} (sent by broker user {sender})", r.code, r.detail);
            self.condemn(r.index, reason);
        }
    }

    /// A result that cannot be applied fails its own step with the reason (as far as its
    /// sender may move that step), and the message that carried it goes to the dead letters
    /// (its other results were applied; replayed, they would be ignored as duplicates).
    async fn fail_poison(
        &mut self,
        held: &mut Held,
        poison: Vec<(usize, store::Error)>,
        applied: &mut Effects,
    ) {
        let permits = self.permits();
        for (i, error) in poison {
            metrics::counter!(m::RESULTS_POISON.name).increment(1);
            let r = &self.results[i].head;
            tracing::error!(step = %r.step_id, task = %r.task_id, attempt = r.attempt, %error,
                "a result could not be applied; failing its step and dead-lettering its message");
            match held
                .apply_results(&[unstorable(r, &error)], std::slice::from_ref(&permits[i]))
                .await
            {
                Ok(failed) => applied.merge(failed),
                Err(e) => tracing::error!(step = %r.step_id, error = %e,
                    "could not record the failure of a step whose result could not be applied"),
            }
            let reason = format!(
                "the result of attempt {} of step {} (task {}) could not be applied: {error}",
                r.attempt, r.step_id, r.task_id
            );
            self.condemn(i, reason);
        }
    }
}

/// Applies the results the messages carry, in as few transactions as possible; returns what
/// the commits left to do and what becomes of each message (`None`: nothing was applied, or
/// the orchestrator is stopping).
async fn apply(
    shared: &Shared,
    held: &mut Held,
    dead: &DeadLetters,
    deliveries: &[Delivery],
    cancel: &CancellationToken,
) -> Result<Option<(Effects, Vec<Fate>)>, tasker_broker::Error> {
    metrics::histogram!(m::RESULT_CONSUME_BATCH_SIZE.name).record(deliveries.len() as f64);
    let mut batch = Batch::read(deliveries, dead).await?;
    if batch.results.is_empty() {
        // Every message was malformed and is settled already; any other is acked below.
        return Ok(Some((Effects::default(), batch.fate)));
    }
    // Who sent each message, from what RabbitMQ validated, and so what its results may move.
    let mut tries = 0;
    let senders = loop {
        match judge(shared, deliveries).await {
            Ok(senders) => break senders,
            Err(e)
                if backoff(cancel, "looking up the senders of results", &e, &mut tries).await => {}
            Err(_) => return Ok(None),
        }
    };
    batch.senders = senders;
    let permits = batch.permits();
    // What streamed, before the results that end it: a reader that sees a task end waits for
    // its last chunks, which travel in the streams queue.
    let expected: Vec<_> = batch
        .results
        .iter()
        .zip(&permits)
        .filter_map(|(r, p)| {
            let h = &r.head;
            h.streamed.map(|n| (h.step_id, h.attempt, n, p.clone()))
        })
        .collect();
    let mut tries = 0;
    while let Err(e) = shared.store.expect_streams(&expected).await {
        if !backoff(cancel, "recording what steps streamed", &e, &mut tries).await {
            return Ok(None);
        }
    }
    let began = std::time::SystemTime::now();
    let max = shared.config.orchestrator.result_batch_max;
    let mut tries = 0;
    let (mut applied, poison) = loop {
        match apply_isolating(held, &batch.results, &permits, max).await {
            Ok(done) => break done,
            Err(e) if backoff(cancel, "applying results", &e, &mut tries).await => {}
            Err(_) => return Ok(None),
        }
    };
    commit_spans(&batch.results, &poison, began);
    batch.reject(&applied);
    batch.fail_poison(held, poison, &mut applied).await;
    Ok(Some((applied, batch.fate)))
}

/// After `what` failed with `error` (the `tries`-th time in a row): logs it and waits before the
/// next try, longer each time up to 5 s (a deliberate backoff: the database is unavailable or
/// in the middle of a change; the batch stays unacked meanwhile). `false` if the orchestrator
/// stops first.
async fn backoff(
    cancel: &CancellationToken,
    what: &str,
    error: &store::Error,
    tries: &mut u32,
) -> bool {
    *tries += 1;
    if *tries == 1 {
        tracing::warn!(%error, "{what} failed; retrying");
    } else {
        tracing::error!(%error, tries = *tries, "{what} failed again; retrying");
    }
    let wait = Duration::from_millis(100 << (*tries - 1).min(6)).min(Duration::from_secs(5));
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(wait) => true,
    }
}

/// The sender of each delivery.
async fn judge(shared: &Shared, deliveries: &[Delivery]) -> Result<Vec<Sender>, store::Error> {
    let mut senders = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        senders.push(shared.senders.judge(&shared.store, d).await?);
    }
    Ok(senders)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Fate {
    /// Its results were applied.
    Ack,
    /// One of its results could not be applied, or was rejected (why; sent by whom): to the
    /// dead letters.
    Dead {
        reason: String,
        sender: Option<String>,
    },
    /// Already rejected (malformed).
    Settled,
}

/// Tracing on: a `tasker.step.commit` span per traced result, from the start of the
/// transactions that applied it to their commit, a child of the worker's result span.
fn commit_spans(results: &[Incoming<'_>], poison: &[(usize, store::Error)], began: SystemTime) {
    if !tasker_telemetry::enabled() {
        return;
    }
    let now = SystemTime::now();
    for (i, r) in results.iter().enumerate() {
        let Some(parent) = r.head.traceparent.as_deref() else {
            continue;
        };
        let span = tasker_telemetry::Span::start_at(
            "tasker.step.commit",
            Some(parent),
            vec![
                tasker_telemetry::attr("tasker.task_id", r.head.task_id.to_string()),
                tasker_telemetry::attr("tasker.step_id", r.head.step_id.to_string()),
                tasker_telemetry::attr("tasker.attempt", i64::from(r.head.attempt)),
            ],
            Some(began),
        );
        if let Some(span) = span {
            if let Some((_, e)) = poison.iter().find(|(p, _)| *p == i) {
                span.fail(format!("could not be applied: {e}"));
            }
            span.end_at(now);
        }
    }
}

/// Applies `results`, at most `max` per transaction; if a transaction fails for a reason of its
/// own (not an unreachable database), splits it in halves until the results that cannot be applied stand alone, so
/// one poison result costs O(log n) extra statements and never blocks the others. Returns the
/// effects of what was applied and, by index, each result that could not be.
async fn apply_isolating(
    held: &mut Held,
    results: &[Incoming<'_>],
    permits: &[Permit],
    max: usize,
) -> Result<(Effects, Vec<(usize, store::Error)>), store::Error> {
    let mut applied = Effects::default();
    let mut poison = Vec::new();
    // (offset, len) ranges still to apply, the first on top.
    let max = max.max(1);
    let mut todo: Vec<(usize, usize)> = (0..results.len())
        .step_by(max)
        .map(|at| (at, max.min(results.len() - at)))
        .rev()
        .collect();
    while let Some((at, len)) = todo.pop() {
        match held
            .apply_results(&results[at..at + len], &permits[at..at + len])
            .await
        {
            Ok(mut effects) => {
                metrics::histogram!(m::RESULT_BATCH_SIZE.name).record(len as f64);
                // Positions in this range, as positions in the whole batch.
                if let Some(counts) = &mut effects.results {
                    for r in &mut counts.rejected {
                        r.index += at;
                    }
                }
                applied.merge(effects)
            }
            // Not the results' fault (a restart, a deadlock, a function replaced under a
            // cached plan): the whole batch is tried again, and no step fails for it.
            Err(e) if e.is_transient() => return Err(e),
            Err(e) if len == 1 => poison.push((at, e)),
            Err(_) => {
                let half = len / 2;
                todo.push((at + half, len - half));
                todo.push((at, half));
            }
        }
    }
    poison.sort_by_key(|(i, _)| *i);
    Ok((applied, poison))
}

/// The permanent failure recorded for a step whose result could not be applied. Only the
/// SQLSTATE goes into the step's error; the database's message is in the log.
fn unstorable(r: &Head, error: &store::Error) -> StepResult {
    let code = match error {
        store::Error::Query(sqlx::Error::Database(db)) => db.code().map(|c| c.into_owned()),
        _ => None,
    };
    StepResult {
        outcome: Outcome::permanent(
            "unstorable_result",
            format!(
                "the orchestrator could not apply this step's result (database error {}); \
                 the result message was dead-lettered",
                code.as_deref().unwrap_or("unknown")
            ),
        ),
        task_id: r.task_id,
        step_id: r.step_id,
        attempt: r.attempt,
        started_at: r.started_at,
        finished_at: r.finished_at,
        worker: r.worker.clone(),
        traceparent: None,
        streamed: None,
    }
}
