//! The task state machine: a task runs until every step is terminal, one step fails for good, or
//! it is cancelled.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
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
    /// Its last open step finished.
    Finish,
    /// One of its steps failed for good.
    Fail,
    Cancel,
}

/// A transition that the state machine does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal task transition: {event:?} from state {from}")]
pub struct IllegalTransition {
    pub from: TaskState,
    pub event: TaskEvent,
}

impl TaskState {
    pub const ALL: [TaskState; 4] = [
        TaskState::Running,
        TaskState::Complete,
        TaskState::Error,
        TaskState::Cancelled,
    ];

    /// The name stored in the database and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
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

    pub fn is_terminal(self) -> bool {
        self != TaskState::Running
    }

    /// The state `event` leads to from `self`, or why it cannot happen.
    pub fn apply(self, event: TaskEvent) -> Result<TaskState, IllegalTransition> {
        match (self, event) {
            (TaskState::Running, TaskEvent::Finish) => Ok(TaskState::Complete),
            (TaskState::Running, TaskEvent::Fail) => Ok(TaskState::Error),
            (TaskState::Running, TaskEvent::Cancel) => Ok(TaskState::Cancelled),
            (from, event) => Err(IllegalTransition { from, event }),
        }
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

    const EVENTS: [TaskEvent; 3] = [TaskEvent::Finish, TaskEvent::Fail, TaskEvent::Cancel];

    #[test]
    fn running_task_reaches_each_terminal_state() {
        assert_eq!(
            TaskState::Running.apply(TaskEvent::Finish),
            Ok(TaskState::Complete)
        );
        assert_eq!(
            TaskState::Running.apply(TaskEvent::Fail),
            Ok(TaskState::Error)
        );
        assert_eq!(
            TaskState::Running.apply(TaskEvent::Cancel),
            Ok(TaskState::Cancelled)
        );
    }

    #[test]
    fn terminal_tasks_reject_every_event() {
        for from in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for event in EVENTS {
                assert_eq!(
                    from.apply(event),
                    Err(IllegalTransition { from, event }),
                    "{from} + {event:?}"
                );
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
