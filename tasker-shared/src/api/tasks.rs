//! The task routes' wire types: tasks, their steps, history, creation and repair.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::task_state::TaskState;

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
    Running,
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
    /// Steps not yet completed, failed, skipped or cancelled; once the task ended, those still
    /// at a worker (steps a failure left pending run only if the task is retried).
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
    /// Its deadline, when it has one (its request's, else its template's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(json(nullable)))]
    pub deadline: Option<TaskDeadline>,
}

/// A task's deadline: how long it may run from its start, and what it gets when it runs longer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDeadline {
    pub within_ms: i64,
    pub action: crate::deadline::DeadlineAction,
    /// When it comes: set when the task starts, cleared once it passed (or the task ended).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub at: Option<DateTime<Utc>>,
    /// When it passed and the task got its action; `null` while it has not.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub passed_at: Option<DateTime<Utc>>,
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
    /// `throttle`), `enqueued` (sent to its workers), `running` (a worker reported its handler
    /// runs this attempt, see `worker` and `started_at`), `waiting` (a wait step waiting, see `wait`; a child step whose
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
    /// The worker running it (`running`), else the one that reported its last result.
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
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<super::schema_only::StepWait>))]
    pub wait: Option<Value>,
    /// The namespace whose workers run it: its own (`namespace:` in the template) or its
    /// task's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub namespace: String,
    /// A child step's child (`StepChild`); `null` for other steps.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<super::schema_only::StepChild>))]
    pub child: Option<Value>,
    /// It waits for a worker, and no live worker serves its namespace and handler
    /// (`GET /v1/workers`).
    #[serde(default)]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub unserved: bool,
    /// While `throttled`, what holds it (`StepThrottle`); `null` otherwise.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<super::schema_only::StepThrottle>))]
    pub throttle: Option<Value>,
    /// The limits it claims before it starts (`StepLimits`); `null` for a step with none.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<super::schema_only::StepLimits>))]
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
    /// `idempotency_key_reused` for another template or context. Keys are per namespace:
    /// another namespace's key never answers (or holds back) this request.
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
    /// One task per `key` for `ttl`, even after the task is purged (a repeat answers it, 200;
    /// or 409 `deduplicated` once it is purged); after it, the key starts a new task. Not with
    /// `idempotency_key` or `debounce`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<crate::start_controls::DedupeSpec>,
    /// One task per burst of requests for `key` (see docs/events.md): `trailing` starts it
    /// `period` after the last request, with its context (201 for the request that makes it,
    /// 200 and the same scheduled task for the rest); `leading` starts it at once. Not with
    /// `idempotency_key`, `dedupe`, `run_at` or `delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce: Option<crate::start_controls::DebounceSpec>,
    /// How long the task may run from its start, and what it gets when it runs longer
    /// (`fail`, `cancel` or `alert`): replaces its template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<crate::deadline::DeadlineSpec>,
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
            dedupe: None,
            debounce: None,
            deadline: None,
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

    /// One task per `key` for `ttl` (`"24h"`), even after it is purged.
    pub fn dedupe(mut self, key: impl Into<String>, ttl: impl Into<String>) -> Self {
        self.dedupe = Some(crate::start_controls::DedupeSpec {
            key: Some(key.into()),
            ttl: ttl.into(),
        });
        self
    }

    /// One task per burst of requests for `key`: `period` (`"5s"`) after the last (`trailing`)
    /// or at the first (`leading`), a burst lasting at most `max`.
    pub fn debounce(
        mut self,
        key: impl Into<String>,
        period: impl Into<String>,
        max: Option<&str>,
        mode: crate::start_controls::DebounceMode,
    ) -> Self {
        self.debounce = Some(crate::start_controls::DebounceSpec {
            key: Some(key.into()),
            period: period.into(),
            max: max.map(Into::into),
            mode,
        });
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
    /// With `counts=true`: how many tasks of each state the filter matches, its `state` left
    /// out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<TaskCounts>,
}

/// How many tasks of each state a filter matches.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    pub scheduled: u64,
    pub running: u64,
    pub complete: u64,
    pub error: u64,
    pub cancelled: u64,
    /// All of them.
    pub total: u64,
}

impl TaskCounts {
    /// Adds `n` tasks of `state` (a state this version does not know counts in `total` only).
    pub fn add(&mut self, state: &str, n: u64) {
        match state {
            "scheduled" => self.scheduled += n,
            "running" => self.running += n,
            "complete" => self.complete += n,
            "error" => self.error += n,
            "cancelled" => self.cancelled += n,
            _ => {}
        }
        self.total += n;
    }
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
