//! The workers registry: what a worker reports and what is listed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A worker as it reports itself (`PUT /v1/workers/{id}`, at start and every heartbeat).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerReport {
    /// The worker's name (`worker.name`, else `<host>-<pid>`).
    pub name: String,
    /// `rust`, `python`, `ruby`, `typescript`, …
    pub language: String,
    /// The Tasker version of its core.
    pub version: String,
    pub host: String,
    pub pid: i64,
    /// The namespaces whose step queues it consumes.
    pub namespaces: Vec<String>,
    /// The handlers it runs.
    pub handlers: Vec<String>,
    /// Steps it runs at once.
    pub concurrency: i32,
    /// How often it reports; it counts as gone after three reports missed.
    pub heartbeat_ms: i32,
    pub started_at: DateTime<Utc>,
}

/// A worker as the registry knows it (`GET /v1/workers`).
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerInfo {
    pub id: Uuid,
    pub name: String,
    pub language: String,
    pub version: String,
    pub host: String,
    pub pid: i64,
    pub namespaces: Vec<String>,
    pub handlers: Vec<String>,
    pub concurrency: i32,
    pub heartbeat_ms: i32,
    pub started_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    /// Whether it reported within its last three heartbeats (and did not leave).
    pub live: bool,
}

/// `GET /v1/workers`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerList {
    pub workers: Vec<WorkerInfo>,
}

/// A template step no live worker serves.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnservedStep {
    pub step: String,
    pub namespace: String,
    pub handler: String,
}

/// Step attempts a worker's handlers are running (`POST /v1/workers/{id}/running`): the worker
/// core reports those running for `worker.running_report_ms`, so a step that runs long is shown
/// `running` with its worker, not `enqueued`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunningReport {
    pub steps: Vec<RunningStep>,
}

/// One attempt a handler runs, since when (the worker's clock).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunningStep {
    pub step_id: Uuid,
    pub attempt: i32,
    pub started_at: DateTime<Utc>,
}

/// What a running report changed.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningRecorded {
    /// Steps now shown `running`. The others of the report had moved on (a result applied, a
    /// retry, an ending), were already shown running, or are of namespaces this worker (or its
    /// token) does not serve; they are left as they are.
    pub recorded: u64,
    /// Steps of the report whose attempt is over (a result applied, a retry or an ending came
    /// first), of namespaces this worker serves: a copy of such an attempt delivered again
    /// (a redelivery, a re-send after its orchestrator died) is not run. Absent from older
    /// orchestrators.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over: Vec<Uuid>,
}
