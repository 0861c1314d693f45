//! The task states and the table of their transitions: a task runs until every step is
//! terminal, one step fails for good, or it is cancelled; a task in error can be repaired by hand. Like [`crate::step_state`], this is the
//! specification the engine in PostgreSQL is tested against (`tests/fast/engine.rs`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Created to start later (`run_at`, `delay`): no step runs before its time.
    Scheduled,
    /// Created; some steps are not terminal yet.
    Running,
    /// Every step completed or was skipped.
    Complete,
    /// A step failed permanently or ran out of attempts.
    Error,
    Cancelled,
}

/// What happens to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskEvent {
    /// Its start time came.
    Start,
    /// Its last open step finished.
    Finish,
    /// One of its steps failed for good.
    Fail,
    Cancel,
    /// Retried or resolved by hand after it ended in error.
    Repair,
}

impl TaskEvent {
    pub const ALL: [TaskEvent; 5] = [
        TaskEvent::Start,
        TaskEvent::Finish,
        TaskEvent::Fail,
        TaskEvent::Cancel,
        TaskEvent::Repair,
    ];
}

/// Every legal transition: `(from, event, to)`. A pair not listed leaves the task unchanged.
pub const TRANSITIONS: [(TaskState, TaskEvent, TaskState); 6] = [
    (TaskState::Scheduled, TaskEvent::Start, TaskState::Running),
    (
        TaskState::Scheduled,
        TaskEvent::Cancel,
        TaskState::Cancelled,
    ),
    (TaskState::Running, TaskEvent::Finish, TaskState::Complete),
    (TaskState::Running, TaskEvent::Fail, TaskState::Error),
    (TaskState::Running, TaskEvent::Cancel, TaskState::Cancelled),
    (TaskState::Error, TaskEvent::Repair, TaskState::Running),
];

impl TaskState {
    pub const ALL: [TaskState; 5] = [
        TaskState::Scheduled,
        TaskState::Running,
        TaskState::Complete,
        TaskState::Error,
        TaskState::Cancelled,
    ];

    /// The name stored in the database and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Scheduled => "scheduled",
            TaskState::Running => "running",
            TaskState::Complete => "complete",
            TaskState::Error => "error",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Parses a stored state name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The state `event` leads to according to [`TRANSITIONS`], or `None` if it changes nothing.
    pub fn on(self, event: TaskEvent) -> Option<TaskState> {
        crate::step_state::lookup(&TRANSITIONS, self, event)
    }

    /// Finished: nothing moves it again except a repair by hand of a task in error.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskState::Running | TaskState::Scheduled)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_tasks_accept_nothing_but_the_repair_of_an_error() {
        for from in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for event in TaskEvent::ALL {
                let expected = (from == TaskState::Error && event == TaskEvent::Repair)
                    .then_some(TaskState::Running);
                assert_eq!(from.on(event), expected, "{from} + {event:?}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(s));
        }
        assert_eq!(TaskState::parse("done"), None);
    }
}
