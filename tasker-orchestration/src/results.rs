//! The result processor: consumes the results queue in batches formed by load (what has
//! arrived, up to a limit), applies each batch in one transaction, publishes the steps it made
//! ready, then acknowledges the batch.

use std::time::Duration;

use tasker_broker::{BasicAckOptions, BasicRejectOptions, Broker, Delivery};
use tasker_shared::{StepResult, topology};
use tokio_util::sync::CancellationToken;

use crate::Shared;

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
        let Some(batch) = batch else {
            return Err(tasker_broker::Error::Amqp(lapin_closed()));
        };
        let deliveries = batch?;
        process(shared, deliveries, cancel).await?;
    }
}

fn lapin_closed() -> lapin::Error {
    lapin::ErrorKind::InvalidConnectionState(lapin::ConnectionState::Closed).into()
}

async fn process(
    shared: &Shared,
    deliveries: Vec<Delivery>,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    metrics::histogram!("tasker_result_batch_size").record(deliveries.len() as f64);
    let mut results = Vec::with_capacity(deliveries.len());
    let mut good = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        match serde_json::from_slice::<StepResult>(&d.data) {
            Ok(r) => {
                results.push(r);
                good.push(d);
            }
            Err(e) => {
                metrics::counter!("tasker_results_malformed_total").increment(1);
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
    let cancel = cancel.clone();
    tokio::spawn(async move {
        shared.settle(applied, &cancel).await;
        for d in good {
            if let Err(e) = d.ack(BasicAckOptions::default()).await {
                tracing::debug!(error = %e, "ack failed (connection lost?); the result will be redelivered");
            }
        }
    });
    Ok(())
}
