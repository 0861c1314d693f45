//! Signals sent to tasks, and the steps that consumed them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A signal sent to a task (`POST /v1/tasks/{id}/signals/{name}`): stored until a wait step
/// waiting for its name consumes it.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    pub task_id: Uuid,
    pub name: String,
    /// Its idempotency key within the task.
    pub signal_id: String,
    pub payload: Value,
    pub received_at: DateTime<Utc>,
    /// The step that consumed it (its result is the payload); `null` while it waits for one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub consumed_by: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub consumed_at: Option<DateTime<Utc>>,
}

/// The body of `POST /v1/tasks/{id}/signals/{name}` (optional).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendSignal {
    /// Sending the same id again with the same payload is a no-op (200), with another a 409
    /// `signal_conflict`; 1 to 128 characters, generated when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_id: Option<String>,
    /// Any JSON up to 64 KiB; the waiting step's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// A task's signals, oldest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalList {
    pub signals: Vec<Signal>,
}
