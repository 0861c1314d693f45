//! Messages that cross the broker. A [`StepMessage`] carries everything a worker needs to run a
//! step (no database access on the worker side); a [`StepResult`] carries the outcome back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// One attempt of one step, sent to the namespace's worker queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMessage {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub namespace: String,
    pub task_name: String,
    pub step_name: String,
    pub handler: String,
    /// 1-based attempt number; a result is accepted only for the step's current attempt.
    pub attempt: u32,
    pub max_attempts: u32,
    /// The task's input context.
    pub context: Value,
    /// Results of the step's completed parents, by step name (a batch that failed under
    /// `on_failure: continue` appears as `{"failed": true, "error": …}`).
    pub parent_results: Map<String, Value>,
    /// The batch of a `batch_worker` instance, as its batchable parent returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    pub dispatched_at: DateTime<Utc>,
    /// How long the handler may run, from its start, in milliseconds.
    pub timeout_ms: u64,
    /// How long after `dispatched_at` the step may still be started, in milliseconds; `None`:
    /// no limit. A worker that receives it later reports a `queue_timeout` failure instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_timeout_ms: Option<u64>,
}

/// The outcome of one attempt, sent to the results queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub attempt: u32,
    pub outcome: Outcome,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// Which worker ran it (for logs and the API).
    pub worker: String,
}

/// What a handler produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Success { result: Value },
    Failure { error: StepError, retryable: bool },
}

impl Outcome {
    /// A failure that is not retried.
    pub fn permanent(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Outcome::Failure {
            error: StepError::new(kind, message),
            retryable: false,
        }
    }
}

impl StepResult {
    /// A permanent failure that Tasker records for an attempt itself, now — no handler's result
    /// (a step too large to send, or never started in time).
    pub fn permanent_failure(
        task_id: Uuid,
        step_id: Uuid,
        attempt: u32,
        kind: &str,
        message: String,
        worker: &str,
    ) -> Self {
        let now = Utc::now();
        StepResult {
            task_id,
            step_id,
            attempt,
            outcome: Outcome::permanent(kind, message),
            started_at: now,
            finished_at: now,
            worker: worker.to_owned(),
        }
    }
}

/// A handler failure as stored with the step: the error's class (or kind), message and backtrace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepError {
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backtrace: Option<String>,
}

impl StepError {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            backtrace: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcome_wire_format_is_tagged_by_status() {
        let ok = serde_json::to_value(Outcome::Success {
            result: json!({"n": 1}),
        })
        .unwrap();
        assert_eq!(ok, json!({"status": "success", "result": {"n": 1}}));
        let failed: Outcome = serde_json::from_value(json!({
            "status": "failure",
            "retryable": false,
            "error": {"kind": "ValueError", "message": "bad"}
        }))
        .unwrap();
        assert_eq!(
            failed,
            Outcome::Failure {
                error: StepError::new("ValueError", "bad"),
                retryable: false
            }
        );
    }

    #[test]
    fn malformed_result_is_rejected() {
        let err = serde_json::from_value::<StepResult>(json!({"task_id": "nope"})).unwrap_err();
        assert!(
            err.to_string().contains("UUID") || err.to_string().contains("uuid"),
            "{err}"
        );
    }
}
