//! What a committed durable operation leaves to do outside the database, as one value.
//!
//! Every operation that changes state — creating a task, applying results, cancelling, a sweep,
//! a retry timer, a wake — commits first and returns an [`Effects`]; `crate::executor` then publishes
//! the steps it made ready, arms retry timers, announces finished tasks and counts metrics.
//! The value sits low (the store returns it) and knows nothing of who carries it out.

use std::time::Duration;

use uuid::Uuid;

use tasker_shared::{StepMessage, TaskState};

/// The consequences of one committed operation.
#[derive(Debug, Default)]
pub struct Effects {
    /// Steps now `enqueued` in the database, to publish.
    pub dispatch: Vec<StepMessage>,
    /// More steps now `enqueued`, whose messages are built and published page by page (a
    /// large fan-out), so memory does not grow with the number of steps.
    pub deferred: Vec<Uuid>,
    /// Steps in `waiting_retry`: start their next attempt after the delay.
    pub retries: Vec<(Uuid, Duration)>,
    /// Throttled steps now enqueued: how long each waited (seconds), by what held it.
    pub throttle_waits: Vec<(String, f64)>,
    /// Timers kept in the database (a task's start, a signal that arrived, a throttled step's
    /// reserved start) that come due after these delays: ring the alarm then.
    pub alarms: Vec<Duration>,
    /// Wait steps whose wait began in this commit: when each one's wake comes (the alarm is
    /// rung then, and `tasker_wake` resolves the step).
    pub waits: Vec<Duration>,
    /// Child steps dispatched in this commit, held by the orchestrator: start their children.
    pub children: Vec<ChildStep>,
    /// Tasks that reached a terminal state, to announce.
    pub finished: Vec<(Uuid, TaskState)>,
    /// Results applied by this operation, if it applied any.
    pub results: Option<ResultCounts>,
    /// The namespace of each task this operation created.
    pub created: Vec<String>,
    /// Steps the sweeper timed out.
    pub timed_out: usize,
    /// Steps the sweeper published again.
    pub republished: usize,
    /// Tasks whose large fan-out this commit counted on tallies (migration 0036): check them
    /// now that it is committed (`tasker_settle`), before anything else.
    pub tallied: Vec<Uuid>,
}

/// A child step to start its child task for: the attempt it was dispatched at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct ChildStep {
    pub step_id: Uuid,
    pub attempt: u32,
}

/// Results of one applied batch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResultCounts {
    /// Results that changed state.
    pub accepted: usize,
    /// Steps whose result was a copy of one already applied (the same attempt again).
    pub ignored: Vec<Uuid>,
    /// Results that matched no step in flight or came from a sender who may not serve their
    /// step's namespace: they changed nothing, and their messages go to the dead letters.
    pub rejected: Vec<Rejected>,
}

/// A result the engine refused to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Its position in the batch applied.
    pub index: usize,
    /// `result_mismatch` or `result_not_permitted`.
    pub code: String,
    /// What did not match, for the dead letter's reason.
    pub detail: String,
}

impl Effects {
    /// Adds what another committed operation left to do.
    pub fn merge(&mut self, other: Effects) {
        self.dispatch.extend(other.dispatch);
        self.deferred.extend(other.deferred);
        self.retries.extend(other.retries);
        self.throttle_waits.extend(other.throttle_waits);
        self.alarms.extend(other.alarms);
        self.waits.extend(other.waits);
        self.children.extend(other.children);
        self.finished.extend(other.finished);
        if let Some(r) = other.results {
            let mine = self.results.get_or_insert_with(ResultCounts::default);
            mine.accepted += r.accepted;
            mine.ignored.extend(r.ignored);
            mine.rejected.extend(r.rejected);
        }
        self.created.extend(other.created);
        self.timed_out += other.timed_out;
        self.republished += other.republished;
        self.tallied.extend(other.tallied);
    }

    /// Just steps to publish.
    pub fn dispatch(dispatch: Vec<StepMessage>) -> Self {
        Self {
            dispatch,
            ..Self::default()
        }
    }
}
