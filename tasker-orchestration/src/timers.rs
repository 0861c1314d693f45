//! The orchestrator's timer: when its alarm rings (a timer armed for a wake, a start or a
//! signal; the sweeper's tick), it resolves the wait steps that are due, starts the tasks
//! whose time came and fires the schedules that are due, all read from PostgreSQL with one
//! indexed query each. Nothing is held in memory that a restart would lose: the alarm only
//! says when to look.

use tokio_util::sync::CancellationToken;

use crate::executor;
use crate::metrics as m;
use crate::scheduler;
use crate::shared::Shared;

/// Rows resolved per transaction.
const BATCH: i64 = 500;

pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = shared.alarm.rung() => {}
        }
        pass(&shared).await;
    }
}

/// One look at every kind of timer; each on its own, so one that fails does not hold up the
/// others.
async fn pass(shared: &Shared) {
    loop {
        match shared.store.wake(BATCH).await {
            Ok((effects, woken)) => {
                ::metrics::counter!(m::WAITS_ENDED.name).increment(woken as u64);
                executor::execute(shared, effects).await;
                if (woken as i64) < BATCH {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "timer: resolving due waits failed; retried at the next tick");
                break;
            }
        }
    }
    loop {
        match shared.store.start_tasks(BATCH).await {
            Ok((effects, started)) => {
                ::metrics::counter!(m::TASKS_STARTED_LATER.name).increment(started as u64);
                executor::execute(shared, effects).await;
                if (started as i64) < BATCH {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "timer: starting due tasks failed; retried at the next tick");
                break;
            }
        }
    }
    match scheduler::fire_due(shared).await {
        Ok(effects) => executor::execute(shared, effects).await,
        Err(e) => {
            tracing::warn!(error = %e, "timer: firing due schedules failed; retried at the next tick")
        }
    }
}
