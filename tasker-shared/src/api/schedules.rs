//! Schedules: how they are shown, changed, paused and backfilled.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A schedule as the API shows it: its definition (`crate::time::ScheduleSpec`) and its state.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub namespace: String,
    pub name: String,
    /// The template's name, in the same namespace.
    pub template: String,
    /// The template version; `null`: the newest at each fire.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub version: Option<String>,
    pub cron: String,
    pub timezone: String,
    pub context: Value,
    /// `skip`, `allow`, `buffer_one` or `cancel_previous`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::time::Overlap))]
    pub overlap: String,
    /// Fires missed longer ago than this are skipped (`"1h"`).
    pub catch_up: String,
    pub paused: bool,
    /// Why it was paused.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub note: Option<String>,
    /// The nominal time of its next fire (`null` when paused or when none comes).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Under `buffer_one`: the nominal time of a fire waiting for the open task to end.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub buffered_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub last_fire_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub last_task_id: Option<Uuid>,
    /// Tasks it started.
    pub fires: i64,
    /// Fires it skipped (overlap, outside the catch-up window, a template or context refused).
    pub skipped: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The token that created or last changed it.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub updated_by: Option<String>,
    /// The next fires (up to 5), on `GET /v1/schedules/{namespace}/{name}` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upcoming: Vec<DateTime<Utc>>,
}

/// Schedules, by namespace and name.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleList {
    pub schedules: Vec<Schedule>,
    /// Set when there may be more: pass it as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `PATCH /v1/schedules/{namespace}/{name}`: the definition fields to change.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleChanges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// A version, or `""` for the newest at each fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<crate::time::Overlap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
}

/// `POST /v1/schedules/{namespace}/{name}/pause` (optional body).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSchedule {
    /// Why (shown with the schedule; at most 1,024 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `POST /v1/schedules/{namespace}/{name}/backfill`: a task for every fire time in
/// `[from, to]` (at most 1,000), each with the idempotency key a regular fire of that time has.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backfill {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// What a backfill did.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backfilled {
    /// Tasks it created.
    pub created: usize,
    /// Fire times that had their task already.
    pub existing: usize,
    /// The tasks of every fire time in the range, in time order.
    pub task_ids: Vec<Uuid>,
}
