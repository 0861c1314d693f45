//! The one place that carries out what a committed operation left to do ([`Effects`]):
//! publishes the steps it made ready, starts the children of child steps, rings the alarm for
//! waits, arms retry timers, announces finished tasks and counts metrics. Nothing else
//! publishes, arms or announces, so the after-commit path cannot drift between callers (the
//! API, the result processor, the sweeper, retry timers).

use std::time::Duration;

use uuid::Uuid;

use tasker_shared::{StepMessage, StepResult};

use crate::dispatcher::Refused;
use crate::effects::{ChildStep, Effects, ResultCounts};
use crate::events::Event;
use crate::metrics as m;
use crate::shared::Shared;

/// Carries out `effects`. Publishing waits for broker confirms (or parks the messages until a
/// connection is back); retry timers run on their own and stop when the orchestrator does.
pub async fn execute(shared: &Shared, mut effects: Effects) {
    if !effects.tallied.is_empty() {
        settle(shared, &mut effects).await;
    }
    let Effects {
        dispatch,
        deferred,
        retries,
        throttle_waits,
        alarms,
        waits,
        children,
        finished,
        results,
        created,
        timed_out,
        republished,
        tallied: _,
    } = effects;
    send(shared, &dispatch).await;
    drop(dispatch);
    for (i, page) in deferred.chunks(DEFERRED_PAGE).enumerate() {
        match shared.store.step_messages(page).await {
            Ok(messages) => send(shared, &messages).await,
            Err(e) => {
                let rest = &deferred[i * DEFERRED_PAGE..];
                tracing::warn!(error = %e, steps = rest.len(),
                    "cannot build the messages of dispatched steps; handing them to the sweeper");
                if let Err(e) = shared.store.release_steps(rest).await {
                    tracing::error!(error = %e, "cannot hand steps to the sweeper; they go out when this orchestrator stops");
                }
                break;
            }
        }
    }
    for (step_id, delay) in retries {
        schedule_retry(shared, step_id, delay);
    }
    hold(shared, waits, children).await;
    for delay in alarms {
        shared.alarm.arm(delay);
    }
    for (kind, seconds) in throttle_waits {
        // The engine's three kinds: a bounded label.
        let kind = match kind.as_str() {
            "rate" => "rate",
            "paused" => "paused",
            _ => "concurrency",
        };
        ::metrics::histogram!(m::THROTTLE_WAIT.name, "kind" => kind).record(seconds);
    }
    // One increment per namespace: a bulk creation counts its thousands at once.
    let mut created = created;
    created.sort_unstable();
    for run in created.chunk_by(|a, b| a == b) {
        ::metrics::counter!(m::TASKS_CREATED.name, "namespace" => run[0].clone())
            .increment(run.len() as u64);
    }
    if timed_out > 0 {
        ::metrics::counter!(m::SWEEPER_TIMEOUTS.name).increment(timed_out as u64);
    }
    if republished > 0 {
        ::metrics::counter!(m::SWEEPER_REPUBLISHED.name).increment(republished as u64);
    }
    shared.latency.finished(finished.iter().map(|(id, _)| *id));
    for (task_id, state) in finished {
        ::metrics::counter!(m::TASKS_FINISHED.name, "state" => state.as_str()).increment(1);
        shared.events.emit(Event::TaskFinished { task_id, state });
    }
    if let Some(ResultCounts {
        accepted,
        ignored,
        rejected,
    }) = results
    {
        ::metrics::counter!(m::RESULTS_APPLIED.name).increment(accepted as u64);
        ::metrics::counter!(m::RESULTS_IGNORED.name).increment(ignored.len() as u64);
        for r in &rejected {
            // The code is one of the engine's two: a bounded label.
            let reason = if r.code == "result_not_permitted" {
                "result_not_permitted"
            } else {
                "result_mismatch"
            };
            ::metrics::counter!(m::RESULTS_REJECTED.name, "reason" => reason).increment(1);
        }
        shared
            .events
            .emit(Event::ResultsApplied { accepted, ignored });
    }
}

/// The check after a commit that counted a large fan-out on tallies: what it resolves (the
/// converging step to run, the task completed) is carried out with the rest. If it fails, the
/// sweeper settles those tasks at its next sweep.
async fn settle(shared: &Shared, effects: &mut Effects) {
    let mut tasks = std::mem::take(&mut effects.tallied);
    tasks.sort_unstable();
    tasks.dedup();
    match shared.store.settle(&tasks).await {
        Ok(settled) => effects.merge(settled),
        Err(e) => tracing::warn!(error = %e, tasks = tasks.len(),
            "settling a fan-out's tallies failed; the sweeper settles them"),
    }
}

/// Steps whose messages are built per query when a dispatch is deferred.
const DEFERRED_PAGE: usize = 512;

/// Sends step messages to the workers' queues; those too large to send fail their steps.
async fn send(shared: &Shared, messages: &[StepMessage]) {
    let refused = shared.dispatcher.publish(messages).await;
    if !refused.is_empty() {
        // Boxed: failing those steps has effects of its own (at most one level deep: a failure
        // publishes nothing larger than what it replaces).
        Box::pin(fail_refused(shared, refused)).await;
    }
}

/// The steps the orchestrator holds itself (`tasker_hold`): a wait began with its commit, so
/// only its wake is left to ring; a child step starts its child task, whose own root steps go
/// out by this same path.
async fn hold(shared: &Shared, waits: Vec<Duration>, children: Vec<ChildStep>) {
    if !waits.is_empty() {
        ::metrics::counter!(m::WAITS_STARTED.name).increment(waits.len() as u64);
        for delay in waits {
            shared.alarm.arm(delay);
        }
    }
    if !children.is_empty() {
        // Boxed: starting children has effects of its own.
        let (effects, failures) = crate::children::start(shared, &children).await;
        Box::pin(execute(shared, effects)).await;
        Box::pin(fail_steps(shared, failures)).await;
    }
}

/// Steps whose message is too large to send fail on their own, permanently, with the sizes.
async fn fail_refused(shared: &Shared, refused: Vec<Refused>) {
    let limit = shared.config.orchestrator.max_message_bytes;
    let failures: Vec<StepResult> = refused
        .into_iter()
        .map(|r| {
            StepResult::permanent_failure(
                r.message.task_id,
                r.message.step_id,
                r.message.attempt,
                "message_too_large",
                format!(
                    "the step's message ({} bytes: its context and parent results) exceeds \
                     max_message_bytes ({limit})",
                    r.bytes
                ),
                "orchestrator",
            )
        })
        .collect();
    ::metrics::counter!(m::STEPS_REFUSED.name).increment(failures.len() as u64);
    fail_steps(shared, failures).await;
}

/// Applies failures the orchestrator decided itself (a message too large to send, a child that
/// cannot start). If the database cannot be reached, the sweeper publishes the steps again
/// and the same decision is made then.
async fn fail_steps(shared: &Shared, failures: Vec<StepResult>) {
    if failures.is_empty() {
        return;
    }
    match shared.store.apply_results(&failures).await {
        Ok(effects) => execute(shared, effects).await,
        Err(e) => tracing::error!(error = %e, steps = failures.len(),
            "could not fail steps the orchestrator refused; the sweeper will publish them again"),
    }
}

/// Starts the next attempt of `step_id` once its backoff elapsed. If this process stops first,
/// the sweeper starts it.
fn schedule_retry(shared: &Shared, step_id: Uuid, delay: Duration) {
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
        match shared.store.dispatch_retries(&[step_id]).await {
            // Boxed: the future is recursive (a retry's effects may arm another timer).
            Ok(effects) => Box::pin(execute(&shared, effects)).await,
            Err(e) => {
                tracing::warn!(step = %step_id, error = %e, "retry dispatch failed; the sweeper will retry")
            }
        }
    });
}
