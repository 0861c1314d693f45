//! What a committed durable operation leaves to do outside the database, as one value, and the
//! one place that does it.
//!
//! Every operation that changes state — creating a task, applying results, cancelling, a sweep,
//! a retry timer — commits first and returns an [`Effects`]; [`execute`] then publishes the
//! steps it made ready, arms retry timers, announces finished tasks and counts metrics. Nothing
//! else publishes, arms or announces, so the after-commit path cannot drift between callers.

use std::time::Duration;

use uuid::Uuid;

use tasker_shared::{StepMessage, TaskState};

use crate::events::Event;
use crate::metrics as m;
use crate::shared::Shared;

/// The consequences of one committed operation.
#[derive(Debug, Default)]
pub struct Effects {
    /// Steps now `enqueued` in the database, to publish.
    pub dispatch: Vec<StepMessage>,
    /// Steps in `waiting_retry`: start their next attempt after the delay.
    pub retries: Vec<(Uuid, Duration)>,
    /// Tasks that reached a terminal state, to announce.
    pub finished: Vec<(Uuid, TaskState)>,
    /// Results applied by this operation, if it applied any.
    pub results: Option<ResultCounts>,
    /// The namespace of a task this operation created.
    pub created: Option<String>,
    /// Steps the sweeper timed out.
    pub timed_out: usize,
    /// Steps the sweeper published again.
    pub republished: usize,
}

/// Results of one applied batch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResultCounts {
    /// Results that changed state.
    pub accepted: usize,
    /// Steps whose result was a duplicate or stale (wrong attempt, no longer in flight).
    pub ignored: Vec<Uuid>,
}

impl Effects {
    /// Just steps to publish.
    pub fn dispatch(dispatch: Vec<StepMessage>) -> Self {
        Self {
            dispatch,
            ..Self::default()
        }
    }
}

/// Carries out `effects`. Publishing waits for broker confirms (or parks the messages until a
/// connection is back); retry timers run on their own and stop when the orchestrator does.
pub async fn execute(shared: &Shared, effects: Effects) {
    let Effects {
        dispatch,
        retries,
        finished,
        results,
        created,
        timed_out,
        republished,
    } = effects;
    shared.dispatcher.publish(&dispatch).await;
    for (step_id, delay) in retries {
        schedule_retry(shared, step_id, delay);
    }
    if let Some(namespace) = created {
        ::metrics::counter!(m::TASKS_CREATED.name, "namespace" => namespace).increment(1);
    }
    if timed_out > 0 {
        ::metrics::counter!(m::SWEEPER_TIMEOUTS.name).increment(timed_out as u64);
    }
    if republished > 0 {
        ::metrics::counter!(m::SWEEPER_REPUBLISHED.name).increment(republished as u64);
    }
    for (task_id, state) in finished {
        ::metrics::counter!(m::TASKS_FINISHED.name, "state" => state.as_str()).increment(1);
        shared.events.emit(Event::TaskFinished { task_id, state });
    }
    if let Some(ResultCounts { accepted, ignored }) = results {
        ::metrics::counter!(m::RESULTS_APPLIED.name).increment(accepted as u64);
        ::metrics::counter!(m::RESULTS_IGNORED.name).increment(ignored.len() as u64);
        shared
            .events
            .emit(Event::ResultsApplied { accepted, ignored });
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
            // Boxed: a retry's own effects never arm another timer, but the future is recursive.
            Ok(effects) => Box::pin(execute(&shared, effects)).await,
            Err(e) => {
                tracing::warn!(step = %step_id, error = %e, "retry dispatch failed; the sweeper will retry")
            }
        }
    });
}
