//! The result processor: consumes the results queue in batches formed by load (what has
//! arrived, up to a limit), applies each batch in one transaction, publishes the steps it made
//! ready, then acknowledges the batch.

use std::time::Duration;

use tasker_broker::{BasicAckOptions, BasicRejectOptions, Broker, Delivery, topology};
use tasker_shared::message::decode_batch;
use tasker_shared::{Outcome, StepResult};
use tokio_util::sync::CancellationToken;

use crate::effects::{self, Effects};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{self, Store};

/// Runs until cancelled (`Ok`) or the broker connection fails (`Err`).
pub(crate) async fn run(
    shared: &Shared,
    broker: &Broker,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let cfg = &shared.config.orchestrator;
    let queue = topology::results_queue(&shared.config.queue_prefix);
    let tag = format!("orchestrator-{}", std::process::id());
    let mut consumer = broker.consume(&queue, &tag, cfg.result_prefetch).await?;
    loop {
        let batch = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            b = tasker_broker::next_batch(&mut consumer, cfg.result_batch_max) => b,
        };
        let deliveries = batch
            .ok_or(tasker_broker::Error::Closed)?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        process(shared, deliveries, cancel).await?;
    }
}

async fn process(
    shared: &Shared,
    deliveries: Vec<Delivery>,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    metrics::histogram!(m::RESULT_CONSUME_BATCH_SIZE.name).record(deliveries.len() as f64);
    // Each message carries one or many results; `from[i]` is the message of `results[i]`.
    let mut results = Vec::with_capacity(deliveries.len());
    let mut from = Vec::with_capacity(deliveries.len());
    let mut good = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        match decode_batch::<StepResult>(&d.data) {
            Ok(batch) => {
                from.extend(std::iter::repeat_n(good.len(), batch.len()));
                results.extend(batch);
                good.push(Some(d));
            }
            Err(e) => {
                metrics::counter!(m::RESULTS_MALFORMED.name).increment(1);
                tracing::warn!(error = %e, "malformed result message; dead-lettering it");
                d.reject(BasicRejectOptions { requeue: false }).await?;
            }
        }
    }
    if results.is_empty() {
        return Ok(());
    }
    let (mut applied, poison) = loop {
        match apply_isolating(
            &shared.store,
            &results,
            shared.config.orchestrator.result_batch_max,
        )
        .await
        {
            Ok(done) => break done,
            Err(e) => {
                tracing::error!(error = %e, "applying results failed; retrying");
                // Deliberate backoff: the database is unavailable. The batch stays unacked.
                tokio::select! {
                    () = cancel.cancelled() => return Ok(()),
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
            }
        }
    };
    // A result that cannot be applied fails its own step with the reason, and the message that
    // carried it goes to the dead letters (its other results were applied; replayed, they
    // would be ignored as duplicates).
    let mut dead = Vec::new();
    for (i, error) in poison {
        metrics::counter!(m::RESULTS_POISON.name).increment(1);
        let r = &results[i];
        tracing::error!(step = %r.step_id, task = %r.task_id, attempt = r.attempt, %error,
            "a result could not be applied; failing its step and dead-lettering its message");
        match shared.store.apply_results(&[unstorable(r, &error)]).await {
            Ok(failed) => applied.merge(failed),
            Err(e) => tracing::error!(step = %r.step_id, error = %e,
                "could not record the failure of a step whose result could not be applied"),
        }
        if let Some(d) = good[from[i]].take() {
            dead.push(d);
        }
    }
    // Publishing the steps this batch made ready waits for broker confirms; meanwhile the next
    // batch can already be applied. The results are acked once their consequences are
    // published (if this process dies first, they are redelivered and ignored as duplicates,
    // and the sweeper re-publishes the committed steps).
    let shared = shared.clone();
    tokio::spawn(async move {
        effects::execute(&shared, applied).await;
        for d in dead {
            if let Err(e) = d.reject(BasicRejectOptions { requeue: false }).await {
                tracing::debug!(error = %e, "dead-lettering failed (connection lost?)");
            }
        }
        for d in good.into_iter().flatten() {
            if let Err(e) = d.ack(BasicAckOptions::default()).await {
                tracing::debug!(error = %e, "ack failed (connection lost?); the result will be redelivered");
            }
        }
    });
    Ok(())
}

/// Applies `results`, at most `max` per transaction; if a transaction fails for a reason of its
/// own (not an unreachable database), splits it in halves until the results that cannot be applied stand alone, so
/// one poison result costs O(log n) extra statements and never blocks the others. Returns the
/// effects of what was applied and, by index, each result that could not be.
async fn apply_isolating(
    store: &Store,
    results: &[StepResult],
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
        match store.apply_results(&results[at..at + len]).await {
            Ok(effects) => {
                metrics::histogram!(m::RESULT_BATCH_SIZE.name).record(len as f64);
                applied.merge(effects)
            }
            Err(e @ store::Error::Unavailable(_)) => return Err(e),
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
fn unstorable(r: &StepResult, error: &store::Error) -> StepResult {
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
        ..r.clone()
    }
}
