//! The REST API's wire types, declared once: the orchestrator serializes them, `tasker-client`
//! deserializes them, and the orchestrator's OpenAPI document (`/openapi.json`) describes them
//! (feature `openapi`). The store reads the row types straight into them (feature `sqlx`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::task_state::TaskState;

mod audit;
mod templates;
pub use audit::{AuditEntry, AuditPage};
pub use templates::RegisteredTemplate;
#[cfg(feature = "openapi")]
pub mod schema_only;

/// A task's state as the API names it: the document's enum for `state` (a string on the wire).
#[cfg(feature = "openapi")]
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum TaskStateName {
    Scheduled,
    Running,
    Complete,
    Error,
    Cancelled,
}

/// A step's state as the API names it: the document's enum for `state` (a string on the wire).
#[cfg(feature = "openapi")]
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum StepStateName {
    Pending,
    Throttled,
    Enqueued,
    Waiting,
    WaitingRetry,
    Completed,
    Failed,
    Skipped,
    Cancelled,
}

/// A task as the API shows it.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: Uuid,
    pub namespace: String,
    /// The template's name.
    pub name: String,
    /// The template version it runs.
    pub version: String,
    /// `scheduled` (to start at `run_at`), `running`, `complete`, `error` or `cancelled`.
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStateName))]
    pub state: String,
    /// The task's input.
    pub context: Value,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub idempotency_key: Option<String>,
    /// Steps not yet completed, failed, skipped or cancelled.
    pub open_steps: i32,
    /// Once complete: the results of the steps no other step depends on, by step name. Lists
    /// leave it out (`null`); a single task has it.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub result: Option<Value>,
    /// Why it ended in `error`.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<Value>,
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub completed_at: Option<DateTime<Utc>>,
    /// Milliseconds from creation to completion.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub duration_ms: Option<f64>,
    /// When a task created to start later (`run_at` or `delay`) starts or started.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub run_at: Option<DateTime<Utc>>,
    /// For a child task: the task whose child step started it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub parent_task_id: Option<Uuid>,
    /// For a child task: the step that started it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub parent_step_id: Option<Uuid>,
    /// How deep it nests: 0 for a task nobody started, its parent's + 1 for a child.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub depth: i32,
    /// The tasks its child steps started, oldest first. A single task has it; lists leave it
    /// out (`null`).
    #[serde(default)]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub children: Option<Vec<ChildLink>>,
    /// `high`, `normal` or `low`: how soon its steps start when workers have more to do than
    /// they can start at once.
    #[serde(default = "normal")]
    #[cfg_attr(feature = "openapi", schema(required, value_type = crate::flow::Priority))]
    pub priority: String,
}

fn normal() -> String {
    crate::flow::Priority::Normal.as_str().to_owned()
}

/// A task a child step started.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildLink {
    pub task_id: Uuid,
    /// The parent's step that started it.
    pub step_id: Uuid,
    pub step_name: String,
    /// The attempt of that step that started it (a retry starts a new child).
    pub attempt: i32,
    /// The child task's state.
    #[cfg_attr(feature = "openapi", schema(value_type = TaskStateName))]
    pub state: String,
    pub namespace: String,
    pub name: String,
    pub version: String,
}

impl Task {
    /// Whether it has ended (`complete`, `error` or `cancelled`; a state this version does not
    /// know counts as ended too, so a wait never outlasts a newer server's new state).
    pub fn is_terminal(&self) -> bool {
        TaskState::parse(&self.state).is_none_or(|s| s.is_terminal())
    }
}

/// A step with its result, error and per-hop timings.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub id: Uuid,
    pub name: String,
    pub handler: String,
    /// `standard`, `decision`, `convergence`, `batchable`, `batch_worker`, `wait` or `child`.
    pub step_type: String,
    /// `pending`, `throttled` (ready, waiting for a concurrency slot or a rate token, see
    /// `throttle`), `enqueued`, `waiting` (a wait step waiting, see `wait`; a child step whose
    /// child runs, see `child`), `waiting_retry`, `completed`, `failed`, `skipped` or
    /// `cancelled`.
    #[cfg_attr(feature = "openapi", schema(value_type = StepStateName))]
    pub state: String,
    /// The current attempt, 1-based (0 before its first dispatch).
    pub attempt: i32,
    pub max_attempts: i32,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub result: Option<Value>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<Value>,
    /// The worker that reported its last result.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub worker: Option<String>,
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub dispatched_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub started_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub finished_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub processed_at: Option<DateTime<Utc>>,
    /// When a step `waiting_retry` is dispatched again.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// A wait step's wait (`StepWait`); `null` for other steps.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<schema_only::StepWait>))]
    pub wait: Option<Value>,
    /// The namespace whose workers run it: its own (`namespace:` in the template) or its
    /// task's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub namespace: String,
    /// A child step's child (`StepChild`); `null` for other steps.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<schema_only::StepChild>))]
    pub child: Option<Value>,
    /// It waits for a worker, and no live worker serves its namespace and handler
    /// (`GET /v1/workers`).
    #[serde(default)]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub unserved: bool,
    /// While `throttled`, what holds it (`StepThrottle`); `null` otherwise.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<schema_only::StepThrottle>))]
    pub throttle: Option<Value>,
    /// The limits it claims before it starts (`StepLimits`); `null` for a step with none.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<schema_only::StepLimits>))]
    pub limits: Option<Value>,
}

/// One entry of a task's history: a task transition (`step` is `null`) or a step transition.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// The step's name; `null` for the task's own transitions.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub step: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub from: Option<String>,
    pub to: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub attempt: Option<i32>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reason: Option<String>,
    /// Who asked for a transition made by hand (a repair); `null` for the engine's own.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub by: Option<String>,
    pub at: DateTime<Utc>,
}

/// `POST /v1/tasks`: a task from a registered template.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTask {
    pub namespace: String,
    /// The template's name.
    pub name: String,
    /// The template version; the newest registered one by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The task's input: a JSON object the template's `context_schema` accepts (`{}` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// Creating again with the same key returns the task it created (200), or 409
    /// `idempotency_key_reused` for another template or context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Start the task at this time (at most a year ahead; a past time starts it now): until
    /// then it is `scheduled` and no step runs. Not with `delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_at: Option<DateTime<Utc>>,
    /// Start the task after this long (`"10m"`, `"1h30m"`; at most `"365d"`). Not with `run_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// How soon its steps start when workers are busy: the template's `priority` by default,
    /// else `normal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<crate::flow::Priority>,
}

impl CreateTask {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            version: None,
            context: None,
            idempotency_key: None,
            run_at: None,
            delay: None,
            priority: None,
        }
    }

    /// How soon its steps start when workers are busy.
    pub fn priority(mut self, p: crate::flow::Priority) -> Self {
        self.priority = Some(p);
        self
    }

    /// Starts the task at `at`.
    pub fn run_at(mut self, at: DateTime<Utc>) -> Self {
        self.run_at = Some(at);
        self
    }

    /// Starts the task after `delay` (`"10m"`).
    pub fn delay(mut self, delay: impl Into<String>) -> Self {
        self.delay = Some(delay.into());
        self
    }

    pub fn version(mut self, v: impl Into<String>) -> Self {
        self.version = Some(v.into());
        self
    }

    pub fn context(mut self, c: Value) -> Self {
        self.context = Some(c);
        self
    }

    pub fn idempotency_key(mut self, k: impl Into<String>) -> Self {
        self.idempotency_key = Some(k.into());
        self
    }
}

/// One page of tasks, newest first; `next_before` is the `before` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPage {
    pub tasks: Vec<Task>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<Uuid>,
}

/// One page of a task's steps in id order; `next` is the `after` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPage {
    pub task_id: Uuid,
    pub steps: Vec<Step>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next: Option<Uuid>,
}

/// A task's transitions, oldest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub task_id: Uuid,
    pub transitions: Vec<Transition>,
}

/// Who asks for a repair and why; both are recorded in the task's history. The body of the
/// retry routes (optional).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairNote {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST /v1/tasks/{id}/steps/{step}/resolve`: complete the failed step with `result`, as if
/// its handler had returned it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolve {
    /// Required (400 `missing_result` without it); a decision's must name its branches, a
    /// batchable step's list its batches (422 `invalid_result`).
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A step's parent results, one page: by step name (`R` is a map, or the JSON text as the
/// orchestrator wrote it); `next` is the `after` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(bound = ""))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParentResults<R = serde_json::Map<String, Value>> {
    pub task_id: Uuid,
    pub step_id: Uuid,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub parent_results: R,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next: Option<Uuid>,
}

/// A message no one could process, as listed: everything but its body and headers.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterInfo {
    pub id: i64,
    /// The queue it was taken from, if known.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub queue: Option<String>,
    pub reason: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub task_id: Option<Uuid>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub step_id: Option<Uuid>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// How often the same message from the same queue was dead-lettered.
    pub times_seen: i32,
    /// The body's size.
    pub bytes: i32,
    /// The broker user that sent it, as RabbitMQ validated it (`null`: none, so replaying it
    /// can move nothing).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub sender: Option<String>,
    /// The namespaces of the tasks its entries name (`null`: one names no task; then only a
    /// token of every namespace sees it).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub namespaces: Option<Vec<String>>,
}

/// One page of dead letters, newest first; `next_before` is the `before` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterPage {
    pub dead_letters: Vec<DeadLetterInfo>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<i64>,
}

/// A dead letter with its AMQP headers and its body: `body` when the body is JSON, else
/// `body_text` when it is UTF-8, else `body_base64`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    #[serde(flatten)]
    pub info: DeadLetterInfo,
    pub headers: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
}

/// A dead letter published again to the queue it came from.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replayed {
    pub replayed: i64,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub queue: Option<String>,
}

/// Registered template versions.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateList {
    pub templates: Vec<RegisteredTemplate>,
}

/// An API token as listed: never the token itself.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: i64,
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub created_by: Option<String>,
    /// The namespace patterns it covers (`shop`, `shop_*`); absent: every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// When it stops working; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// Live API tokens.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

/// `POST /v1/tokens`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// Namespace patterns the token covers (`*` is any run of characters); absent: every
    /// namespace the creating token covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// Seconds until it stops working (at most ten years); absent: it never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<u64>,
}

/// A token just created: the only time it is shown.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedToken {
    pub id: i64,
    pub name: String,
    pub scope: String,
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// The RabbitMQ user whose results speak for this token (a worker's broker user of the
    /// same name); absent when that name already spoke for a token of namespaces its creator
    /// does not cover (docs/auth.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_user: Option<String>,
}

/// Every error answer: `{"error": {"code", "message", "details"?}}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// Every error `code` the API answers with (the OpenAPI document's `ErrorCode` enum; each
/// operation's responses say which of them it may give). The orchestrator refuses, in debug
/// builds, to answer with a code missing here.
pub const ERROR_CODES: &[&str] = &[
    "backfill_too_large",
    "bad_body",
    "batch_too_large",
    "body_too_large",
    "body_too_slow",
    "broker_unavailable",
    "concurrency_key_missing",
    "concurrency_key_too_long",
    "context_filter_too_large",
    "context_schema_violation",
    "context_too_large",
    "cross_origin",
    "dead_letter_not_found",
    "duplicate_idempotency_key",
    "empty_batch",
    "forbidden",
    "host_not_allowed",
    "idempotency_key_reused",
    "internal",
    "invalid_catch_up",
    "invalid_context",
    "invalid_context_filter",
    "invalid_cron",
    "invalid_delay",
    "invalid_expiry",
    "invalid_id",
    "invalid_idempotency_key",
    "invalid_json",
    "invalid_limit",
    "invalid_name",
    "invalid_namespaces",
    "invalid_note",
    "invalid_older_than",
    "invalid_path",
    "invalid_query",
    "invalid_range",
    "invalid_result",
    "invalid_run_at",
    "invalid_schedule",
    "invalid_scope",
    "invalid_signal_id",
    "invalid_signal_name",
    "invalid_state",
    "invalid_template",
    "invalid_time",
    "invalid_timezone",
    "invalid_until",
    "invalid_wait",
    "invalid_worker",
    "method_not_allowed",
    "missing_result",
    "no_such_route",
    "not_replayable",
    "query_timeout",
    "rate_key_owned",
    "rate_limit_key_missing",
    "rate_limit_key_too_long",
    "rate_limited",
    "schedule_not_found",
    "signal_conflict",
    "signal_too_large",
    "step_not_failed",
    "step_not_found",
    "task_finished",
    "task_not_failed",
    "task_not_found",
    "task_not_running",
    "task_purged",
    "template_version_conflict",
    "token_name_taken",
    "token_not_found",
    "too_many_backfills",
    "too_many_connections",
    "too_many_requests",
    "too_many_schedules",
    "too_many_signals",
    "too_many_streams",
    "too_many_waits",
    "unauthenticated",
    "unknown_child_template",
    "unknown_rate_limit",
    "unknown_template",
    "unsupported_media_type",
    "worker_not_found",
];

/// What went wrong: a stable `code` to match on, a message for people, sometimes details.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Stable: `task_not_found`, `invalid_context`, `idempotency_key_reused`, … (the enum of
    /// every code; a client should still expect codes a newer server adds).
    #[cfg_attr(feature = "openapi", schema(value_type = schema_only::ErrorCode))]
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// `GET /ready`: whether this orchestrator reaches PostgreSQL and RabbitMQ.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    pub database: bool,
    pub broker: bool,
    /// Step messages waiting for the broker.
    pub dispatch_backlog: usize,
}

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

/// A concurrency key: at most `limit` steps holding its slots at once.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyLimit {
    /// `<namespace>/<template>:<value>` (a template's limit) or
    /// `<namespace>/<template>/<step>:<value>` (a step's).
    pub key: String,
    pub limit: i32,
    /// Slots held by steps in flight.
    pub in_use: i32,
    /// Steps waiting for a slot.
    pub throttled: i64,
    /// When a step last claimed a slot of it.
    pub used_at: DateTime<Utc>,
}

/// `GET /v1/concurrency-limits`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyLimitList {
    pub limits: Vec<ConcurrencyLimit>,
    /// Set when there may be more: pass it as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// A rate key: at most `limit` step starts per `per_ms`, `burst` of them at once.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    pub key: String,
    pub limit: i32,
    pub per_ms: i64,
    pub burst: i32,
    /// No step of this key starts before this time (an operator's pause).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub paused_until: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub pause_note: Option<String>,
    /// Who paused it (the token's name).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub paused_by: Option<String>,
    /// Steps waiting for a token of it (or for its pause to end).
    pub throttled: i64,
    /// When a step last took a token of it.
    pub used_at: DateTime<Utc>,
}

/// `GET /v1/rate-limits`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimitList {
    pub limits: Vec<RateLimit>,
    /// Set when there may be more: pass it as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `POST /v1/rate-limits/{key}/pause`: no step of the key starts before `until`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseRateLimit {
    /// In the future, at most a year ahead.
    pub until: DateTime<Utc>,
    /// Why (shown with the key), at most 1,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

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

/// `POST /v1/purge`: remove finished tasks now, as the retention policy does on its own.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    /// Tasks finished longer ago than this (`"36h"`, `"30d"`; at least `"1h"`).
    pub older_than: String,
    /// Of these finished states (`complete`, `error`, `cancelled`; all three by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<schema_only::PurgeState>>))]
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
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<schema_only::PurgeState>))]
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
