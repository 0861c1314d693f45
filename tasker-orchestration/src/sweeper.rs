//! The sweeper: off the hot path, on an interval. It times out steps past their deadline
//! (their worker died or the message was lost), re-publishes steps whose first publication may
//! have been lost (a crash between commit and publish), and starts retries whose backoff
//! elapsed while the orchestrator that scheduled them was gone.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::effects;
use crate::shared::Shared;

/// Extra time past a step's timeout before the sweeper declares it lost; the worker reports
/// its own timeouts first.
const DEADLINE_GRACE: Duration = Duration::from_secs(5);
const SWEEP_LIMIT: i64 = 500;

pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(
        shared.config.orchestrator.sweep_interval_ms.max(10),
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = sweep(&shared).await {
            tracing::warn!(error = %e, "sweep failed");
        }
    }
}

async fn sweep(shared: &Shared) -> Result<(), crate::store::Error> {
    let overdue = shared.store.overdue(DEADLINE_GRACE, SWEEP_LIMIT).await?;
    if !overdue.is_empty() {
        let mut applied = shared.store.apply_results(&overdue).await?;
        applied.timed_out = applied.results.as_ref().map_or(0, |r| r.accepted);
        tracing::info!(count = applied.timed_out, "timed out overdue steps");
        effects::execute(shared, applied).await;
    }
    let visibility = Duration::from_millis(shared.config.orchestrator.visibility_timeout_ms);
    let lost = shared.store.republish(visibility, SWEEP_LIMIT).await?;
    if lost.republished > 0 {
        tracing::info!(
            count = lost.republished,
            "re-publishing steps enqueued past the visibility timeout"
        );
        effects::execute(shared, lost).await;
    }
    let due = shared.store.due_retries(SWEEP_LIMIT).await?;
    if !due.is_empty() {
        let retried = shared.store.dispatch_retries(&due).await?;
        effects::execute(shared, retried).await;
    }
    Ok(())
}
