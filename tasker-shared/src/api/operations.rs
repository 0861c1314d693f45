//! Operations by filter: retry, resolve or cancel every task a filter matches, or replay or
//! discard every dead letter one matches, as one operation with an id, an exact count and
//! progress.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Which tasks (retry, resolve, cancel) or dead letters (replay, discard) an operation acts on:
/// every field given must match (none given: every task of the states the action acts on, or
/// every dead letter, in the namespaces the token covers). `namespace`, `created_after` and
/// `created_before` apply to both (a dead letter's namespaces are those of the tasks its entries
/// name; its time is when it was first seen); `queue`, `reason` and `dead_letters` to dead
/// letters only; the others to tasks only.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The template's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The template's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The task's state. retry and resolve act on `error` only (the default); cancel on
    /// `running` and `scheduled` (both by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::TaskStateName>))]
    pub state: Option<String>,
    /// The step that failed the task (by name); for a task not in error, a step of that name
    /// still in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The `kind` of the error that failed the task (`TimeoutError`, `ValueError`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Tasks created at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<DateTime<Utc>>,
    /// Tasks created before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<DateTime<Utc>>,
    /// Tasks whose context contains this JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// Only these tasks (at most 10,000 ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<Uuid>>,
    /// Dead letters from this queue (`<prefix>.results`, `<prefix>.steps.<namespace>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Dead letters whose reason starts with this (a code: `result_mismatch`, `malformed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Only these dead letters (at most 10,000 ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<Vec<i64>>,
}

impl OperationFilter {
    /// Whether `action` acts on dead letters (`replay`, `discard`) rather than tasks.
    pub fn of_dead_letters(action: &str) -> bool {
        matches!(action, "replay" | "discard")
    }
}

/// `POST /v1/operations`: act on every task `filter` matches.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartOperation {
    /// `retry` (a task in error: its failed step runs again), `resolve` (its failed step is
    /// completed with `result`), `cancel` (a running or scheduled task), `replay` (a dead letter
    /// goes back to the queue it came from) or `discard` (a dead letter is deleted); the last two
    /// need an admin token.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema_only::OperationAction))]
    pub action: String,
    #[serde(default)]
    pub filter: OperationFilter,
    /// Why (recorded in each task's history, with the operation's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who asks (recorded in each task's history); with tokens, the token's name leads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// resolve only: the failed step's result, as its handler would have returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Count the tasks the filter matches; act on none.
    #[serde(default)]
    pub dry_run: bool,
}

/// An operation by filter and its progress: of the `matched` tasks, `acted` were acted on and
/// `skipped` were left (no longer in a state the action takes, purged, or outside the token's
/// namespaces); the rest are still to come.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    pub id: Uuid,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema_only::OperationAction))]
    pub action: String,
    /// The filter as applied (the action's default states filled in).
    pub filter: OperationFilter,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reason: Option<String>,
    /// Who asked, as recorded in each task's history.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub by: Option<String>,
    /// `running`, `complete`, `cancelled` or `failed`.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema_only::OperationState))]
    pub state: String,
    pub matched: u64,
    pub acted: u64,
    pub skipped: u64,
    /// Why it failed (its token was revoked, ...), or who cancelled it.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub finished_at: Option<DateTime<Utc>>,
}

impl Operation {
    /// Tasks still to be acted on.
    pub fn left(&self) -> u64 {
        self.matched.saturating_sub(self.acted + self.skipped)
    }

    /// Whether it has ended (`complete`, `cancelled`, `failed`).
    pub fn is_finished(&self) -> bool {
        self.state != "running"
    }
}

/// What a dry run found: how many tasks the operation would act on, and the first of them.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationCount {
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema_only::OperationAction))]
    pub action: String,
    /// The filter as it would be applied.
    pub filter: OperationFilter,
    /// The exact number of tasks (or dead letters) matched.
    pub matched: u64,
    /// Up to 10 of the tasks, newest first (none for dead letters).
    pub sample: Vec<Uuid>,
    /// Up to 10 of the dead letters, newest first (replay, discard).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead_letter_sample: Vec<i64>,
}

/// Operations, newest first; `next_before` is the `before` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationList {
    pub operations: Vec<Operation>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<Uuid>,
}
