//! The audit log's wire types (`GET /v1/audit`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One request that asked to change something, as the audit log keeps it: who, what, when, from
/// where, and what it was answered.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    /// When the request arrived.
    pub at: DateTime<Utc>,
    /// The id of the token it came with; absent with tokens off or without a valid token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<i64>,
    /// That token's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_name: Option<String>,
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The route's pattern (`/v1/tasks/{id}/cancel`).
    pub route: String,
    /// The status of the answer (a refusal included: 401, 403, 4xx).
    pub status: i16,
    /// The address the request came from (the TCP peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Its `X-Forwarded-For` header, kept only when `orchestrator.audit_forwarded_for` is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded_for: Option<String>,
    /// The namespaces it named (the task's, for a route of a task).
    pub namespaces: Vec<String>,
    /// The task it acted on (created, cancelled, retried, resolved, signalled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    /// What else it acted on, by kind: `template`, `schedule`, `token`, `dead_letter`,
    /// `worker`, `rate_key`, `step`, `signal`, `tasks` (a bulk create's counts), ...
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub target: Value,
}

/// One page of the audit log, newest first; `next_before` is the `before` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<i64>,
}
