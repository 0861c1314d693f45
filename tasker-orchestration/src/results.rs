//! The result processor: consumes the results queue in batches formed by load (what has
//! arrived, up to a limit), applies each batch in one transaction, publishes the steps it made
//! ready, then acknowledges the batch.

use std::time::Duration;

use tasker_broker::{BasicAckOptions, BasicRejectOptions, Broker, Delivery, topology};
use tasker_shared::StepResult;
use tokio_util::sync::CancellationToken;

use crate::effects;
use crate::metrics as m;
use crate::shared::Shared;

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
    metrics::histogram!(m::RESULT_BATCH_SIZE.name).record(deliveries.len() as f64);
    let mut results = Vec::with_capacity(deliveries.len());
    let mut good = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        match serde_json::from_slice::<StepResult>(&d.data) {
            Ok(r) => {
                results.push(r);
                good.push(d);
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
    let applied = loop {
        match shared.store.apply_results(&results).await {
            Ok(a) => break a,
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
    // Publishing the steps this batch made ready waits for broker confirms; meanwhile the next
    // batch can already be applied. The results are acked once their consequences are
    // published (if this process dies first, they are redelivered and ignored as duplicates,
    // and the sweeper re-publishes the committed steps).
    let shared = shared.clone();
    tokio::spawn(async move {
        effects::execute(&shared, applied).await;
        for d in good {
            if let Err(e) = d.ack(BasicAckOptions::default()).await {
                tracing::debug!(error = %e, "ack failed (connection lost?); the result will be redelivered");
            }
        }
    });
    Ok(())
}
