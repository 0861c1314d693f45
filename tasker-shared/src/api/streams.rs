//! Step streams as readers get them: `GET /v1/tasks/{id}/stream`, as a page of JSON or as
//! Server-Sent Events (each chunk an event whose id is its offset).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One chunk of a task's stream.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    /// Its place in the task's stream: 0, 1, 2 … in the order the orchestrator kept the chunks
    /// of all the task's steps (each step's chunks in the order it emitted them).
    pub offset: i64,
    /// The task whose step emitted it: the stream's own task, or, read with `children=true`,
    /// one of its child tasks (at any depth).
    pub task_id: Uuid,
    pub step_id: Uuid,
    /// The step's name.
    pub step: String,
    /// The step attempt that emitted it (1-based).
    pub attempt: i32,
    /// Its place in that attempt's stream, from 0.
    pub seq: i32,
    pub topic: String,
    /// What `emit_text` sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What `emit` sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The attempt's stream ended here; it carries no text or data.
    #[serde(default)]
    pub end: bool,
    /// The first chunk of a step's retry: what the step streamed under its earlier attempts is
    /// superseded by what follows.
    #[serde(default)]
    pub retry: bool,
    /// When the handler emitted it.
    pub at: DateTime<Utc>,
}

/// A page of a task's stream (`GET /v1/tasks/{id}/stream` as JSON).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamPage {
    pub task_id: Uuid,
    pub chunks: Vec<StreamChunk>,
    /// The offset to read from next (`from=next`).
    pub next: i64,
    /// The task has ended and so has every step attempt's stream: nothing will follow `next`.
    pub complete: bool,
}
