//! `GET /v1/tasks/{id}/steps/{step}/inputs`: one attempt of a step as its handler received it,
//! for replaying it locally (`tasker replay`, each language's testing module).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// What a step's handler received on one attempt — the task's context, the parent results,
/// the batch, the attempt — with the step's definition (type, branches, retry policy, timeout)
/// and what its latest attempt ended with. The context and parent results are those the
/// orchestrator puts in the step's message, whatever their size.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepInputs {
    pub task_id: Uuid,
    pub step_id: Uuid,
    /// The step's namespace (the queue its workers read).
    pub namespace: String,
    /// The task's template.
    pub task_name: String,
    pub step_name: String,
    pub handler: String,
    /// `standard`, `decision`, `convergence`, `batchable` or `batch_worker`.
    pub step_type: String,
    /// A decision's branches.
    pub branches: Vec<String>,
    /// The attempt asked for (from 1; the latest unless `?attempt=`).
    pub attempt: u32,
    pub max_attempts: u32,
    /// The step's retry policy.
    pub retry: InputsRetry,
    pub timeout_ms: u64,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub context: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub parent_results: Map<String, Value>,
    /// A batch worker's batch.
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<Object>))]
    pub input: Option<Value>,
    /// The step's state now.
    pub state: String,
    /// The step's latest attempt.
    pub latest_attempt: u32,
    /// The latest attempt's error (`{kind, message, backtrace?}`), if it failed.
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<Object>))]
    pub error: Option<Value>,
}

/// A step's retry policy, as its template wrote it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputsRetry {
    /// `none`, `linear` or `exponential`.
    pub backoff: String,
    pub base_ms: u64,
    pub max_ms: u64,
}
