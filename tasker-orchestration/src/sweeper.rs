//! The sweeper: off the hot path, on an interval. It heartbeats for this orchestrator, fails
//! steps that no worker started within their queue timeout (when the template sets one),
//! re-publishes the steps of an orchestrator that stopped heartbeating (a crash between commit
//! and publish), starts retries whose backoff elapsed while the orchestrator that scheduled
//! them was gone, settles fan-out tallies no commit checked, flushes this orchestrator's
//! dispatch backlog, and every
//! [`RECONCILE_EVERY`] recounts the concurrency slots (the reconciler).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::executor;
use crate::shared::Shared;

/// Extra time past a step's queue timeout plus run timeout before the sweeper fails it; a
/// worker that started it reports its own timeout first.
const DEADLINE_GRACE: Duration = Duration::from_secs(5);
const SWEEP_LIMIT: i64 = 500;
/// How often the reconciler recounts the concurrency slots.
pub const RECONCILE_EVERY: Duration = Duration::from_secs(10);

/// How recent an orchestrator's heartbeat (written at each sweep) must be for it to count as
/// live: five sweep intervals, at least 2 s, so a stopped or killed one hands over quickly.
pub(crate) fn live_window(config: &tasker_shared::config::Config) -> Duration {
    let sweep = config.orchestrator.sweep_interval_ms.max(10);
    Duration::from_millis((5 * sweep).max(2_000))
}

pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(
        shared.config.orchestrator.sweep_interval_ms.max(10),
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reconciled = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = shared.store.heartbeat().await {
            tracing::warn!(error = %e, "sweep: heartbeat failed");
        }
        // Each phase on its own: one that fails (say on a row it cannot handle) must not stop
        // the others from recovering everyone else's steps.
        if let Err(e) = time_out(&shared).await {
            tracing::warn!(error = %e, "sweep: timing out overdue steps failed");
        }
        if let Err(e) = republish(&shared).await {
            tracing::warn!(error = %e, "sweep: re-publishing lost steps failed");
        }
        if let Err(e) = retry_due(&shared).await {
            tracing::warn!(error = %e, "sweep: starting due retries failed");
        }
        if let Err(e) = settle(&shared).await {
            tracing::warn!(error = %e, "sweep: settling fan-out tallies failed");
        }
        if reconciled.elapsed() >= RECONCILE_EVERY {
            reconciled = tokio::time::Instant::now();
            if let Err(e) = reconcile(&shared).await {
                tracing::warn!(error = %e, "sweep: recounting concurrency slots failed");
            }
        }
        // Messages parked by a failed round while a connection lived on (a broker that blocked
        // publishers, a channel replaced) go out now, not at a reconnect that may never come.
        shared.dispatcher.flush().await;
        // The timer looks at waits, delayed starts and schedules at every tick too: those
        // another orchestrator armed before it stopped, and fires a catch-up paces one a tick.
        shared.alarm.ring();
        shared.events.emit(Event::Swept);
    }
}

async fn time_out(shared: &Shared) -> Result<(), crate::store::Error> {
    let overdue = shared.store.overdue(DEADLINE_GRACE, SWEEP_LIMIT).await?;
    if !overdue.is_empty() {
        let mut applied = shared.store.apply_results(&overdue).await?;
        applied.timed_out = applied.results.as_ref().map_or(0, |r| r.accepted);
        tracing::info!(
            count = applied.timed_out,
            "timed out steps past their queue timeout"
        );
        executor::execute(shared, applied).await;
    }
    Ok(())
}

async fn republish(shared: &Shared) -> Result<(), crate::store::Error> {
    let visibility = Duration::from_millis(shared.config.orchestrator.visibility_timeout_ms);
    let lost = shared.store.republish(visibility, SWEEP_LIMIT).await?;
    if lost.republished > 0 {
        tracing::info!(
            count = lost.republished,
            "re-publishing steps enqueued past the visibility timeout"
        );
        executor::execute(shared, lost).await;
    }
    Ok(())
}

pub(crate) async fn retry_due(shared: &Shared) -> Result<(), crate::store::Error> {
    let due = shared.store.due_retries(SWEEP_LIMIT).await?;
    if !due.is_empty() {
        let retried = shared.store.dispatch_retries(&due).await?;
        executor::execute(shared, retried).await;
    }
    Ok(())
}

/// Settles the tallies an orchestrator counted a large fan-out on and stopped before checking
/// (`tasker_settle`); a task whose tallies hold nothing left to resolve costs one read.
async fn settle(shared: &Shared) -> Result<(), crate::store::Error> {
    let tasks = shared.store.unsettled(SWEEP_LIMIT).await?;
    if !tasks.is_empty() {
        let settled = shared.store.settle(&tasks).await?;
        executor::execute(shared, settled).await;
    }
    Ok(())
}

/// Recounts every concurrency key's slots from the steps holding them; a difference (which
/// the release trigger makes impossible) is corrected, logged and counted.
async fn reconcile(shared: &Shared) -> Result<(), crate::store::Error> {
    let drift = shared.store.reconcile_slots().await?;
    for d in &drift {
        tracing::warn!(key = %d.key, recorded = d.recorded, counted = d.counted,
            "concurrency slots recorded wrongly; corrected");
    }
    if !drift.is_empty() {
        ::metrics::counter!(crate::metrics::CONCURRENCY_DRIFT.name).increment(drift.len() as u64);
    }
    // The keys it marked to wake are looked at when this sweep rings the timer.
    Ok(())
}
