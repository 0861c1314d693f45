//! The orchestrator's timer: when its alarm rings (a timer armed for a wake, a start or a
//! signal; the sweeper's tick) or a slot is freed (`tasker_wake`), it resolves the wait steps
//! that are due, starts the throttled steps whose slot freed or whose time came, starts the
//! tasks whose time came, gives tasks past their deadline their action and fires the schedules
//! that are due, all read from PostgreSQL with one indexed query each. Nothing is held in memory that a restart would lose: the alarm only
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
            () = shared.events.woken() => {}
        }
        pass(&shared).await;
    }
}

/// One look at every kind of timer; each on its own, so one that fails does not hold up the
/// others.
pub(crate) async fn pass(shared: &Shared) {
    // One pass at a time in this process: a pass that finds a schedule locked by another
    // (`SKIP LOCKED`) moves on, so a caller that must see the effects of the time it moved
    // (`POST /v1/clock/skip` and `/advance` in test mode) would otherwise be answered before the
    // concurrent pass of the timer loop committed them.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _pass = ONE_AT_A_TIME.lock().await;
    drain(
        shared,
        "resolving due waits",
        &m::WAITS_ENDED,
        |s| async move { s.store.wake(BATCH).await },
    )
    .await;
    drain(
        shared,
        "starting throttled steps",
        &m::THROTTLED_WOKEN,
        |s| async move { s.store.wake_throttled(BATCH).await },
    )
    .await;
    drain(
        shared,
        "starting due tasks",
        &m::TASKS_STARTED_LATER,
        |s| async move { s.store.start_tasks(BATCH).await },
    )
    .await;
    pass_deadlines(shared).await;
    match scheduler::fire_due(shared).await {
        Ok(effects) => executor::execute(shared, effects).await,
        Err(e) => {
            tracing::warn!(error = %e, "timer: firing due schedules failed; retried at the next tick")
        }
    }
}

/// Gives the running tasks past their deadline their action, a batch at a time.
async fn pass_deadlines(shared: &Shared) {
    loop {
        match shared.store.pass_deadlines(BATCH).await {
            Ok(passed) => {
                let done = passed.count();
                for (task, state) in &passed.effects.finished {
                    let action = if *state == tasker_shared::TaskState::Cancelled {
                        "cancel"
                    } else {
                        "fail"
                    };
                    tracing::info!(%task, action, "task passed its deadline");
                    ::metrics::counter!(m::DEADLINES_PASSED.name, "action" => action).increment(1);
                }
                for task in &passed.alerted {
                    tracing::warn!(%task, "task passed its deadline (alert): it runs on");
                    ::metrics::counter!(m::DEADLINES_PASSED.name, "action" => "alert").increment(1);
                }
                executor::execute(shared, passed.effects).await;
                if (done as i64) < BATCH {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "timer: passing deadlines failed; retried at the next tick");
                return;
            }
        }
    }
}

/// Runs `step` (one batch of a kind of timer) until it returns less than a full batch, carrying
/// out each batch's effects and counting what it resolved in `metric`.
async fn drain<F, Fut>(shared: &Shared, what: &str, metric: &tasker_shared::metric::Metric, step: F)
where
    F: Fn(Shared) -> Fut,
    Fut:
        std::future::Future<Output = Result<(crate::effects::Effects, usize), crate::store::Error>>,
{
    loop {
        match step(shared.clone()).await {
            Ok((effects, done)) => {
                ::metrics::counter!(metric.name).increment(done as u64);
                executor::execute(shared, effects).await;
                if (done as i64) < BATCH {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "timer: {what} failed; retried at the next tick");
                return;
            }
        }
    }
}
