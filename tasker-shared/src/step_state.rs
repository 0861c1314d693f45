//! The step state machine. Storage turns each transition into a guarded
//! `UPDATE … WHERE state = <from>`, so a transition happens exactly once however many times the
//! message that caused it arrives.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a step is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Waiting for its parents.
    Pending,
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
    /// Its parents are done (or its backoff elapsed): publish an attempt.
    Dispatch,
    Succeed,
    FailRetryable,
    FailPermanent,
    /// A decision step did not choose it (or a parent was skipped).
    Skip,
    Cancel,
}

/// A transition that the state machine does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal step transition: {event:?} from state {from}")]
pub struct IllegalTransition {
    pub from: StepState,
    pub event: StepEvent,
}

impl StepState {
    pub const ALL: [StepState; 7] = [
        StepState::Pending,
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

    /// A terminal step never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StepState::Completed | StepState::Failed | StepState::Skipped | StepState::Cancelled
        )
    }

    /// The state `event` leads to from `self`, or why it cannot happen.
    pub fn apply(self, event: StepEvent) -> Result<StepState, IllegalTransition> {
        use StepEvent as E;
        use StepState as S;
        let to = match (self, event) {
            (S::Pending | S::WaitingRetry, E::Dispatch) => S::Enqueued,
            (S::Enqueued, E::Succeed) => S::Completed,
            (S::Enqueued, E::FailRetryable) => S::WaitingRetry,
            (S::Enqueued, E::FailPermanent) => S::Failed,
            (S::Pending, E::Skip) => S::Skipped,
            (S::Pending | S::Enqueued | S::WaitingRetry, E::Cancel) => S::Cancelled,
            (from, event) => return Err(IllegalTransition { from, event }),
        };
        Ok(to)
    }

    /// Every state from which `event` is legal: the `WHERE state IN (…)` guard of a transition.
    pub fn sources_of(event: StepEvent) -> Vec<StepState> {
        Self::ALL
            .into_iter()
            .filter(|s| s.apply(event).is_ok())
            .collect()
    }
}

impl fmt::Display for StepState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepEvent as E;
    use StepState as S;

    const EVENTS: [StepEvent; 6] = [
        E::Dispatch,
        E::Succeed,
        E::FailRetryable,
        E::FailPermanent,
        E::Skip,
        E::Cancel,
    ];

    /// The whole legal table, written out independently of `apply`.
    const LEGAL: [(StepState, StepEvent, StepState); 9] = [
        (S::Pending, E::Dispatch, S::Enqueued),
        (S::WaitingRetry, E::Dispatch, S::Enqueued),
        (S::Enqueued, E::Succeed, S::Completed),
        (S::Enqueued, E::FailRetryable, S::WaitingRetry),
        (S::Enqueued, E::FailPermanent, S::Failed),
        (S::Pending, E::Skip, S::Skipped),
        (S::Pending, E::Cancel, S::Cancelled),
        (S::Enqueued, E::Cancel, S::Cancelled),
        (S::WaitingRetry, E::Cancel, S::Cancelled),
    ];

    fn legal(from: StepState, event: StepEvent) -> Option<StepState> {
        LEGAL
            .iter()
            .find(|(f, e, _)| *f == from && *e == event)
            .map(|(_, _, to)| *to)
    }

    #[test]
    fn every_pair_matches_the_table() {
        let mut legal_count = 0;
        for from in S::ALL {
            for event in EVENTS {
                match (legal(from, event), from.apply(event)) {
                    (Some(to), Ok(got)) => {
                        assert_eq!(got, to, "{from:?} + {event:?}");
                        legal_count += 1;
                    }
                    (None, Err(err)) => assert_eq!(err, IllegalTransition { from, event }),
                    (want, got) => panic!("{from:?} + {event:?}: want {want:?}, got {got:?}"),
                }
            }
        }
        assert_eq!(legal_count, 9);
    }

    #[test]
    fn redispatching_an_enqueued_step_or_completing_twice_is_illegal() {
        assert!(S::Enqueued.apply(E::Dispatch).is_err());
        assert!(S::Completed.apply(E::Succeed).is_err());
    }

    #[test]
    fn terminal_states_accept_no_event() {
        for from in S::ALL.into_iter().filter(|s| s.is_terminal()) {
            for event in EVENTS {
                assert!(from.apply(event).is_err(), "{from:?} + {event:?}");
            }
        }
    }

    #[test]
    fn names_round_trip_and_unknown_is_rejected() {
        for s in S::ALL {
            assert_eq!(S::parse(s.as_str()), Some(s));
        }
        assert_eq!(S::parse("running"), None);
    }

    #[test]
    fn sources_are_the_guard_of_each_event() {
        assert_eq!(
            StepState::sources_of(E::Dispatch),
            vec![S::Pending, S::WaitingRetry]
        );
        assert_eq!(
            StepState::sources_of(E::Cancel),
            vec![S::Pending, S::Enqueued, S::WaitingRetry]
        );
        assert_eq!(StepState::sources_of(E::Succeed), vec![S::Enqueued]);
    }
}
