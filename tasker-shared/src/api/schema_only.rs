//! Types that exist only to describe, in the OpenAPI document, JSON the API sends as a
//! `serde_json::Value` or a `String`: a step's `wait`, `child`, `throttle` and `limits` (built by
//! the store) and the finished states a purge takes. The clients generated from the document
//! (workers/python, workers/typescript) get them as types; nothing serializes them. The error
//! codes' schema is `errors::ErrorCode`.

#![allow(dead_code)]

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// What a wait step waits for.
#[derive(Debug, utoipa::ToSchema)]
pub struct StepWait {
    pub kind: WaitKind,
    /// The signal a `signal` wait waits for.
    #[schema(required)]
    pub signal: Option<String>,
    /// The event an `event` wait waits for (docs/events.md).
    pub event: Option<String>,
    /// While it waits: when it wakes up, or times out waiting for its signal.
    #[schema(required)]
    pub until: Option<DateTime<Utc>>,
    /// What a signal wait does when it times out.
    #[schema(required)]
    pub on_timeout: Option<OnTimeout>,
}

/// A duration (`sleep`), a time from the task's context (`until`), a signal (`signal`) or an
/// event of the task's namespace (`event`).
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum WaitKind {
    Sleep,
    Until,
    Signal,
    Event,
}

/// What a signal wait does when its timeout comes first.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum OnTimeout {
    Fail,
    Skip,
    Continue,
}

/// What a child step starts: a task of the template `namespace`/`name`/`version` (pinned when
/// the parent task was created).
#[derive(Debug, utoipa::ToSchema)]
pub struct StepChild {
    pub namespace: String,
    pub name: String,
    pub version: String,
    /// The child task once it exists.
    #[schema(required)]
    pub task_id: Option<Uuid>,
    /// What cancelling or failing the parent does to the child while it runs.
    #[schema(required)]
    pub on_parent_cancel: Option<ParentCancel>,
}

/// `cancel` the child with its parent, or `abandon` it (it runs on alone).
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ParentCancel {
    Cancel,
    Abandon,
}

/// Why a `throttled` step has not started yet.
#[derive(Debug, utoipa::ToSchema)]
pub struct StepThrottle {
    pub kind: ThrottleKind,
    /// The concurrency or rate key that holds it.
    pub key: String,
    /// That key's limit.
    pub limit: i64,
    /// When the step began to wait.
    pub since: DateTime<Utc>,
    /// When it may start (a rate token reserved, a pause's end); `null` for a concurrency wait,
    /// which starts when a slot frees.
    #[schema(required)]
    pub until: Option<DateTime<Utc>>,
}

/// Every slot of a concurrency key in use (`concurrency`), no token left in a rate key
/// (`rate`), or a rate key paused (`paused`).
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ThrottleKind {
    Concurrency,
    Rate,
    Paused,
}

/// The limits a step claims before it starts (its own, else its template's), keys resolved
/// from the task's context; each absent when there is none.
#[derive(Debug, utoipa::ToSchema)]
pub struct StepLimits {
    pub concurrency: Option<StepConcurrencyLimit>,
    pub rate: Option<StepRateLimit>,
}

/// At most `limit` steps of the key `key` run at once (`<namespace>/<template>:<value>`, or
/// `<namespace>/<template>/<step>:<value>` for a step's own limit).
#[derive(Debug, utoipa::ToSchema)]
pub struct StepConcurrencyLimit {
    pub key: String,
    pub limit: i64,
}

/// Steps of the rate key `key` start at most `limit` times per `per_ms` milliseconds, `burst`
/// at once.
#[derive(Debug, utoipa::ToSchema)]
pub struct StepRateLimit {
    pub key: String,
    pub limit: i64,
    pub per_ms: i64,
    pub burst: i64,
}

/// A finished state, as a purge takes and reports them.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum PurgeState {
    Complete,
    Error,
    Cancelled,
}

/// What an operation by filter does to each task it matched.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum OperationAction {
    Retry,
    Resolve,
    Cancel,
    Replay,
    Discard,
}

/// Where an operation by filter stands.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum OperationState {
    Running,
    Complete,
    Cancelled,
    Failed,
}
