//! Retention: the policy, and purging finished tasks by hand.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `POST /v1/purge`: remove finished tasks now, as the retention policy does on its own.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    /// Tasks finished longer ago than this (`"36h"`, `"30d"`; at least `"1h"`).
    pub older_than: String,
    /// Of these finished states (`complete`, `error`, `cancelled`; all three by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<super::schema_only::PurgeState>>))]
    pub states: Option<Vec<String>>,
    /// Count what would go; delete nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Most tasks this request purges (1 to 100,000; 10,000 by default): call again while
    /// `more`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// The retention policy the orchestrator runs (`[retention]`), and when a task was last purged.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// How long completed tasks are kept: a duration (`"30d"`) or `"never"`.
    pub complete: String,
    /// How long failed tasks are kept.
    pub error: String,
    /// How long cancelled tasks are kept.
    pub cancelled: String,
    /// How long a purged task's id answers `410 task_purged`.
    pub tombstones: String,
    /// How long the audit log keeps its rows (absent from orchestrators before the audit log).
    #[serde(default)]
    pub audit: String,
    /// How often an orchestrator looks for tasks to purge.
    pub interval_ms: u64,
    /// Tasks purged per transaction.
    pub batch: u64,
    /// The most of its time a purge spends deleting (1 to 100).
    pub busy_percent: u8,
    /// When the most recently purged task still remembered (its tombstone kept) was purged,
    /// by the policy or on request; `null` if none is.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub last_purged_at: Option<DateTime<Utc>>,
}

/// What a purge removed (or, in a dry run, would remove).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Purged {
    pub dry_run: bool,
    pub older_than: String,
    /// The completion-time cut-off: tasks that finished before it.
    pub before: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<super::schema_only::PurgeState>))]
    pub states: Vec<String>,
    /// Tasks purged (or purgeable).
    pub tasks: u64,
    pub by_state: std::collections::BTreeMap<String, u64>,
    /// Rows deleted, every table together (`null` in a dry run).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub rows: Option<u64>,
    /// Bytes of row data deleted (`null` in a dry run).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub bytes: Option<u64>,
    /// `limit` stopped it with more to purge: call again.
    pub more: bool,
}
