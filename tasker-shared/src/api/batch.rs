//! Creating tasks in bulk.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{CreateTask, ErrorDetail};

/// `POST /v1/tasks:batch`: many tasks in one request and one transaction.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTasks {
    /// Each what `POST /v1/tasks` takes; at most `orchestrator.max_batch_tasks` (10,000 by
    /// default), no two with the same idempotency key.
    pub tasks: Vec<CreateTask>,
}

/// What a bulk creation did with each item, in request order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchCreated {
    pub created: usize,
    pub existing: usize,
    pub refused: usize,
    pub results: Vec<BatchItem>,
}

/// One item of a bulk creation.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchItem {
    /// Its position in the request.
    pub index: usize,
    pub status: BatchStatus,
    /// The task created, or the one its idempotency key created before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    /// Why nothing was created for it: the error `POST /v1/tasks` would answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// `created`, `existing` (its idempotency key's task, same template and context) or `refused`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    Created,
    Existing,
    Refused,
}
