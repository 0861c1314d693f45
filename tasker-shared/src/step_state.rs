//! The step states and the table of their transitions. The engine that performs them lives in
//! PostgreSQL (`tasker-orchestration/sql/`): each transition is a guarded
//! `UPDATE … WHERE state = <from>`, so it happens exactly once however many times the message
//! that caused it arrives. This table is the specification; `tests/fast/engine.rs` drives every
//! (state, event) pair through the engine and compares the outcome with it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a step is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Waiting for its parents.
    Pending,
    /// Ready, but waiting for a concurrency slot or a rate token; not in flight.
    Throttled,
    /// Published to a worker queue; the current attempt is in flight.
    Enqueued,
    /// The last attempt failed retryably; the next one starts after its backoff.
    WaitingRetry,
    Completed,
    /// Failed permanently, or ran out of attempts.
    Failed,
    /// Not on the path a decision step chose.
    Skipped,
    Cancelled,
}

/// What happens to a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepEvent {
    /// Its parents are done (or its backoff elapsed, or its limits were claimed): publish an
    /// attempt.
    Dispatch,
    /// Ready, but a limit it claims is taken: wait throttled.
    Throttle,
    /// Its handler succeeded.
    Succeed,
    /// Its handler failed retryably and attempts remain.
    FailRetryable,
    /// Its handler failed permanently, or retryably with no attempt left.
    FailPermanent,
    /// A decision step did not choose it (or a parent was skipped).
    Skip,
    /// Its task ended (cancelled, or failed through another step).
    Cancel,
    /// Its task, ended in error, is retried by hand: the step that failed it runs again (its
    /// next attempt is dispatched at once), the steps the failure cancelled wait again.
    Repair,
    /// The step that failed its task is completed by hand with a supplied result.
    Resolve,
}

impl StepEvent {
    pub const ALL: [StepEvent; 9] = [
        StepEvent::Dispatch,
        StepEvent::Throttle,
        StepEvent::Succeed,
        StepEvent::FailRetryable,
        StepEvent::FailPermanent,
        StepEvent::Skip,
        StepEvent::Cancel,
        StepEvent::Repair,
        StepEvent::Resolve,
    ];

    /// A repair by hand (retry or resolve): the only events a terminal step accepts.
    pub fn is_repair(self) -> bool {
        matches!(self, StepEvent::Repair | StepEvent::Resolve)
    }
}

/// Every legal transition: `(from, event, to)`. A pair not listed leaves the step unchanged.
pub const TRANSITIONS: [(StepState, StepEvent, StepState); 16] = {
    use StepEvent as E;
    use StepState as S;
    [
        (S::Pending, E::Dispatch, S::Enqueued),
        (S::WaitingRetry, E::Dispatch, S::Enqueued),
        (S::Throttled, E::Dispatch, S::Enqueued),
        (S::Pending, E::Throttle, S::Throttled),
        (S::WaitingRetry, E::Throttle, S::Throttled),
        (S::Enqueued, E::Succeed, S::Completed),
        (S::Enqueued, E::FailRetryable, S::WaitingRetry),
        (S::Enqueued, E::FailPermanent, S::Failed),
        (S::Pending, E::Skip, S::Skipped),
        (S::Pending, E::Cancel, S::Cancelled),
        (S::Enqueued, E::Cancel, S::Cancelled),
        (S::WaitingRetry, E::Cancel, S::Cancelled),
        (S::Throttled, E::Cancel, S::Cancelled),
        (S::Failed, E::Repair, S::WaitingRetry),
        (S::Cancelled, E::Repair, S::Pending),
        (S::Failed, E::Resolve, S::Completed),
    ]
};

impl StepState {
    pub const ALL: [StepState; 8] = [
        StepState::Pending,
        StepState::Throttled,
        StepState::Enqueued,
        StepState::WaitingRetry,
        StepState::Completed,
        StepState::Failed,
        StepState::Skipped,
        StepState::Cancelled,
    ];

    /// The name stored in the database and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Throttled => "throttled",
            StepState::Enqueued => "enqueued",
            StepState::WaitingRetry => "waiting_retry",
            StepState::Completed => "completed",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
            StepState::Cancelled => "cancelled",
        }
    }

    /// Parses a stored state name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The state `event` leads to according to [`TRANSITIONS`], or `None` if it changes nothing.
    pub fn on(self, event: StepEvent) -> Option<StepState> {
        lookup(&TRANSITIONS, self, event)
    }

    /// A terminal step never changes again on its own: only a repair by hand
    /// ([`StepEvent::is_repair`]) moves it, and only while its task is in error.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StepState::Completed | StepState::Failed | StepState::Skipped | StepState::Cancelled
        )
    }
}

/// The `to` of the row `(from, event, to)` of a transition table, if there is one.
pub(crate) fn lookup<S: Copy + PartialEq, E: PartialEq>(
    table: &[(S, E, S)],
    from: S,
    event: E,
) -> Option<S> {
    table
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}

impl fmt::Display for StepState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_a_function_of_state_and_event() {
        for (i, (from, event, _)) in TRANSITIONS.iter().enumerate() {
            assert!(
                !TRANSITIONS[..i]
                    .iter()
                    .any(|(f, e, _)| f == from && e == event),
                "{from:?} + {event:?} listed twice"
            );
        }
    }

    #[test]
    fn terminal_states_accept_only_repairs() {
        for from in StepState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for event in StepEvent::ALL.into_iter().filter(|e| !e.is_repair()) {
                assert_eq!(from.on(event), None, "{from:?} + {event:?}");
            }
        }
    }

    #[test]
    fn repairs_start_only_from_failed_or_cancelled() {
        for (from, event, _) in TRANSITIONS.into_iter().filter(|(_, e, _)| e.is_repair()) {
            assert!(
                matches!(from, StepState::Failed | StepState::Cancelled),
                "{from:?} + {event:?}"
            );
        }
        assert_eq!(StepState::Completed.on(StepEvent::Repair), None);
        assert_eq!(StepState::Skipped.on(StepEvent::Repair), None);
    }

    #[test]
    fn names_round_trip_and_unknown_is_rejected() {
        for s in StepState::ALL {
            assert_eq!(StepState::parse(s.as_str()), Some(s));
        }
        assert_eq!(StepState::parse("running"), None);
    }
}
