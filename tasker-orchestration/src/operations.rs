//! Operations by filter, run: every orchestrator looks for running operations no live
//! orchestrator holds (every [`SCAN`], and at once when its API starts one), takes each for a
//! [`LEASE`] it extends with every batch, and acts on its tasks a batch per transaction
//! (`Store::operate`) at `operations.busy_percent` of its time. An orchestrator that dies stops
//! its heartbeat: another one (or it, restarted) goes on where the last batch committed once the
//! heartbeat is older than the live window (2 s by default), or at the latest when the lease
//! runs out.
//!
//! Before every batch the token that started the operation is looked up again: revoked or
//! expired, the operation fails and acts on nothing more; narrowed, the tasks outside its
//! namespaces now are left `forbidden`.

use std::time::{Duration, Instant};

mod letters;

use tokio_util::sync::CancellationToken;

use crate::executor;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{Batch, Claimed};

/// How often an orchestrator looks for operations to take over.
pub const SCAN: Duration = Duration::from_secs(2);
/// How long an operation stays with the orchestrator running it without a batch committing:
/// how long one whose orchestrator died waits before another goes on with it.
pub const LEASE: Duration = Duration::from_secs(10);

/// The operations loop of an orchestrator.
pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(SCAN);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
            () = shared.operations.notified() => {}
        }
        let live = crate::sweeper::live_window(&shared.config);
        let claimed = match shared.store.claim_operations(LEASE, live).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for operations to run");
                continue;
            }
        };
        for op in claimed {
            drive(&shared, &op, &cancel).await;
        }
    }
}

/// Runs operation `id` batch by batch until it ends, another transaction holds it, a batch
/// fails (it is taken up again when its lease runs out), or the orchestrator stops.
async fn drive(shared: &Shared, op: &Claimed, cancel: &CancellationToken) {
    let (id, config) = (op.id, &shared.config.operations);
    while !cancel.is_cancelled() {
        let Some(covers) = judge(shared, op).await else {
            return;
        };
        let started = Instant::now();
        let batch = if tasker_shared::api::OperationFilter::of_dead_letters(&op.action) {
            letters::batch(shared, id, &op.action, config.batch, covers.as_deref()).await
        } else {
            shared
                .store
                .operate(id, config.batch, covers.as_deref(), LEASE)
                .await
        };
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                tracing::warn!(operation = %id, error = %e,
                    "an operation's batch failed; it is tried again when its lease runs out");
                return;
            }
        };
        let took = started.elapsed();
        let Batch {
            state,
            acted,
            skipped,
            effects,
        } = batch;
        record(&op.action, acted, skipped, took);
        executor::execute(shared, effects).await;
        if state != "running" {
            return;
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(rest(took, config.busy_percent)) => {}
        }
    }
}

/// The namespaces the operation's token covers now, as a regular expression (`Some(None)`: every
/// one); `None` when it may go on no more (the operation is ended as failed) or the token could
/// not be read.
async fn judge(shared: &Shared, op: &Claimed) -> Option<Option<String>> {
    let (id, action) = (op.id, op.action.as_str());
    let Some(token) = op.token_id else {
        return Some(None);
    };
    let letters = tasker_shared::api::OperationFilter::of_dead_letters(action);
    match shared.store.principal_by_id(token).await {
        Ok(Some(p)) if !letters || p.scope >= crate::store::Scope::Admin => {
            Some(p.namespaces.as_ref().map(|n| n.to_regex()))
        }
        found => {
            if let Err(e) = found {
                tracing::warn!(operation = %id, error = %e, "could not read the operation's token");
                return None;
            }
            let why = format!(
                "the API token that started it (id {token}) has been revoked or has expired"
            );
            tracing::warn!(operation = %id, "operation stopped: {why}");
            if let Err(e) = shared.store.end_operation(id, "failed", &why).await {
                tracing::warn!(operation = %id, error = %e, "could not end the operation");
            }
            None
        }
    }
}

/// Counts a batch, by the operation's action.
fn record(action: &str, acted: u64, skipped: u64, took: Duration) {
    ::metrics::histogram!(m::OPERATION_BATCH.name).record(took.as_secs_f64());
    for (outcome, n) in [("acted", acted), ("skipped", skipped)] {
        ::metrics::counter!(m::OPERATION_TASKS.name, "action" => action.to_owned(),
            "outcome" => outcome)
        .increment(n);
    }
}

/// The pause after a batch that took `took`, so the operation acts at most `busy_percent` of
/// its time.
fn rest(took: Duration, busy_percent: u8) -> Duration {
    let busy = u32::from(busy_percent.clamp(1, 100));
    took * (100 - busy) / busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_rests_so_that_it_acts_at_most_its_share_of_the_time() {
        let took = Duration::from_millis(40);
        assert_eq!(rest(took, 50), Duration::from_millis(40));
        assert_eq!(rest(took, 20), Duration::from_millis(160));
        assert_eq!(rest(took, 100), Duration::ZERO);
        assert_eq!(rest(took, 0), Duration::from_millis(3_960));
    }
}
