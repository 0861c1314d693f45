//! Creating and cancelling tasks: `tasker_create_task` inserts a task, its steps and edges in one
//! statement (root steps already enqueued); `tasker_end_task` cancels a running one.

use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::plan::Plan;
use tasker_shared::template::Loaded;
use tasker_shared::{StepMessage, TaskState};

use super::{Error, Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// A task to create from a registered template.
#[derive(Debug)]
pub struct NewTask<'a> {
    pub template_id: Uuid,
    pub template: &'a Loaded,
    pub context: Value,
    pub idempotency_key: Option<String>,
    /// Start later: the task is `scheduled` until then.
    pub run_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Each child step's specification with its template pinned
    /// ([`crate::catalog::Catalog::pin_children`]), by template step index.
    pub children: Vec<Option<Value>>,
    /// For a child task: the parent step attempt that starts it.
    pub parent: Option<ParentLink>,
    /// How soon its steps start when workers are busy.
    pub priority: tasker_shared::flow::Priority,
}

/// The parent step attempt a child task is started by.
#[derive(Debug, Clone, Copy)]
pub struct ParentLink {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub attempt: i32,
    /// The child's depth (its parent's + 1).
    pub depth: i32,
    pub on_parent_cancel: tasker_shared::compose::ParentCancel,
}

/// What creating a task did.
#[derive(Debug)]
pub struct Created {
    pub task_id: Uuid,
    /// False when the idempotency key matched an existing task, which is returned instead.
    pub created: bool,
    /// The template and context of the task returned (the existing one for a repeated key).
    pub template_id: Uuid,
    pub context: Value,
    /// Root steps to publish and the creation to count, now that the transaction committed.
    pub effects: Effects,
    /// For a child task: its parent step was no longer in flight, so nothing was created.
    pub parent_gone: bool,
}

/// The JSON answer of `tasker_create_task`.
#[derive(serde::Deserialize)]
struct CreatedRow {
    created: bool,
    #[serde(default)]
    task_id: Uuid,
    #[serde(default)]
    template_id: Uuid,
    #[serde(default)]
    context: Value,
    #[serde(default)]
    dispatch: Vec<StepMessage>,
    /// Roots with limits: the timed waits of those throttled, and those beyond the first page.
    #[serde(flatten)]
    claimed: super::results::Claimed,
    #[serde(default)]
    deferred: Vec<Uuid>,
    #[serde(default)]
    parent_gone: bool,
}

impl Store {
    /// Records the trace context of the span that created `task` (tracing on), so the steps
    /// dispatched for it later continue its trace. The first one stays.
    pub async fn set_traceparent(&self, task: Uuid, traceparent: &str) -> Result<()> {
        sqlx::query("UPDATE tasks SET traceparent = $2 WHERE id = $1 AND traceparent IS NULL")
            .bind(task)
            .bind(traceparent)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Creates a task, its steps and edges in one statement (`tasker_create_task`). Root steps
    /// are stored already `enqueued` (attempt 1) and returned for publishing.
    pub async fn create_task(&self, new: NewTask<'_>) -> Result<Created> {
        create_task_on(&mut *self.pool.acquire().await?, new).await
    }

    /// Cancels a running task and every step not yet terminal. Returns the task's state after
    /// the call with, if this call cancelled it, what the cancellation leaves to do; `None` if
    /// there is no such task.
    pub async fn cancel_task(&self, task_id: Uuid) -> Result<Option<(TaskState, Option<Effects>)>> {
        let cancelled: bool = retry_deadlocks(&mut *self.pool.acquire().await?, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar(
                    "SELECT tasker_end_task($1, 'cancelled', NULL, 'cancelled by request')",
                )
                .bind(task_id)
                .fetch_one(conn)
                .await?)
            })
        })
        .await?;
        if cancelled {
            let effects = Effects {
                finished: vec![(task_id, TaskState::Cancelled)],
                ..Effects::default()
            };
            return Ok(Some((TaskState::Cancelled, Some(effects))));
        }
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        state
            .map(|s| {
                TaskState::parse(&s)
                    .map(|st| (st, None))
                    .ok_or_else(|| Error::UnknownState(s.clone()))
            })
            .transpose()
    }
}

/// [`Store::create_task`] on `conn` (a transaction's, for a schedule's fire).
pub(super) async fn create_task_on(
    conn: &mut sqlx::PgConnection,
    new: NewTask<'_>,
) -> Result<Created> {
    let t = &new.template.template;
    let plan = Plan::new(new.template);
    let ids: Vec<Uuid> = t.steps.iter().map(|_| Uuid::now_v7()).collect();
    // Each step's limits, their keys read from the context (422 for a key it lacks).
    let limits = t
        .steps
        .iter()
        .map(|s| tasker_shared::flow::resolve(t, s, &new.context))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::Limits)?;
    let mut cols = StepColumns::default();
    for &i in &plan.steps {
        // A batchable step's spec carries its batch worker's limits, for the batches it makes.
        let batch_spec = Plan::batch_spec(new.template, i).map(|mut spec| {
            if let Some(l) = t
                .steps
                .iter()
                .position(|w| Some(w.name.as_str()) == spec["name"].as_str())
                .and_then(|w| limits[w].clone())
            {
                spec["limits"] = l;
            }
            spec
        });
        cols.push(
            ids[i],
            &t.steps[i],
            &t.namespace,
            plan.parent_count(i) as i32,
            Made {
                batch_spec,
                child: new.children.get(i).cloned().flatten(),
                limits: limits[i].clone(),
            },
        );
    }
    let edges: (Vec<Uuid>, Vec<Uuid>) = plan.edges.iter().map(|&(p, c)| (ids[p], ids[c])).unzip();
    let task = TaskColumns {
        id: Uuid::now_v7(),
        template_id: new.template_id,
        namespace: &t.namespace,
        name: &t.name,
        version: &t.version,
        context: &new.context,
        idempotency_key: new.idempotency_key.as_deref(),
        run_at: new.run_at,
        parent: new.parent,
        priority: new.priority,
    };
    let query = sqlx::query_scalar(
        "SELECT tasker_create_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                   $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
                                   $26, $27, $28, $29, $30, $31, $32, $33, $34)",
    );
    let query = task.bind(query);
    let query = cols.bind(query);
    let answer: Value = query.bind(&edges.0).bind(&edges.1).fetch_one(conn).await?;
    let row: CreatedRow = decode("tasker_create_task", answer)?;
    Ok(Created {
        task_id: row.task_id,
        created: row.created,
        template_id: row.template_id,
        context: row.context,
        parent_gone: row.parent_gone,
        effects: Effects {
            dispatch: row.dispatch,
            deferred: row.deferred,
            throttle_waits: row.claimed.waits(),
            created: row.created.then(|| t.namespace.clone()),
            // A task that starts later: look at the timers when its time comes (and when
            // throttled roots may start).
            wakes: new
                .run_at
                .filter(|_| row.created)
                .and_then(|at| (at - chrono::Utc::now()).to_std().ok())
                .into_iter()
                .chain(row.claimed.wakes())
                .collect(),
            ..Effects::default()
        },
    })
}

/// A `tasker_create_task` call being built: its parameters are bound group by group, in the
/// function's order (the task's, then its steps' columns, then its edges).
type CreateCall<'q> =
    sqlx::query::QueryScalar<'q, sqlx::Postgres, Value, sqlx::postgres::PgArguments>;

/// The task's own columns: `tasker_create_task`'s `$1` to `$14`.
struct TaskColumns<'a> {
    id: Uuid,
    template_id: Uuid,
    namespace: &'a str,
    name: &'a str,
    version: &'a str,
    context: &'a Value,
    idempotency_key: Option<&'a str>,
    run_at: Option<chrono::DateTime<chrono::Utc>>,
    parent: Option<ParentLink>,
    priority: tasker_shared::flow::Priority,
}

impl<'a> TaskColumns<'a> {
    fn bind<'q>(&self, query: CreateCall<'q>) -> CreateCall<'q>
    where
        'a: 'q,
    {
        query
            .bind(self.id)
            .bind(self.template_id)
            .bind(self.namespace)
            .bind(self.name)
            .bind(self.version)
            .bind(self.context)
            .bind(self.idempotency_key)
            .bind(self.run_at)
            .bind(self.parent.map(|p| p.task_id))
            .bind(self.parent.map(|p| p.step_id))
            .bind(self.parent.map(|p| p.attempt))
            .bind(self.parent.map(|p| p.depth))
            .bind(self.parent.map(|p| p.on_parent_cancel.as_str()))
            .bind(self.priority.rank())
    }
}

/// What the task's creation made of a step beyond its template: a batchable step's batch spec,
/// a child step's pinned child, the limits its keys resolved to.
struct Made {
    batch_spec: Option<Value>,
    child: Option<Value>,
    limits: Option<Value>,
}

/// Column vectors for the bulk `unnest` insert of a task's steps: `tasker_create_task`'s `$15`
/// to `$32` (its edges, `$33` and `$34`, follow).
#[derive(Default)]
struct StepColumns {
    id: Vec<Uuid>,
    name: Vec<String>,
    handler: Vec<String>,
    step_type: Vec<String>,
    branches: Vec<Value>,
    max_attempts: Vec<i32>,
    backoff: Vec<String>,
    base_ms: Vec<i64>,
    max_ms: Vec<i64>,
    timeout_ms: Vec<i64>,
    queue_timeout_ms: Vec<Option<i64>>,
    parents: Vec<i32>,
    batch_spec: Vec<Option<Value>>,
    on_failure: Vec<String>,
    wait: Vec<Option<Value>>,
    namespace: Vec<Option<String>>,
    child: Vec<Option<Value>>,
    limits: Vec<Option<Value>>,
}

impl StepColumns {
    fn bind<'q>(&'q self, query: CreateCall<'q>) -> CreateCall<'q> {
        query
            .bind(&self.id)
            .bind(&self.name)
            .bind(&self.handler)
            .bind(&self.step_type)
            .bind(&self.branches)
            .bind(&self.max_attempts)
            .bind(&self.backoff)
            .bind(&self.base_ms)
            .bind(&self.max_ms)
            .bind(&self.timeout_ms)
            .bind(&self.queue_timeout_ms)
            .bind(&self.parents)
            .bind(&self.batch_spec)
            .bind(&self.on_failure)
            .bind(&self.wait)
            .bind(&self.namespace)
            .bind(&self.child)
            .bind(&self.limits)
    }

    fn push(
        &mut self,
        id: Uuid,
        s: &tasker_shared::StepTemplate,
        template_namespace: &str,
        parents: i32,
        made: Made,
    ) {
        self.id.push(id);
        self.name.push(s.name.clone());
        self.handler.push(s.engine_handler().to_owned());
        self.step_type.push(s.engine_type().as_str().to_owned());
        self.branches.push(json!(s.branches));
        // A child step's failure is its child's, for good: one attempt (a repair starts another).
        let attempts = if s.child.is_some() {
            1
        } else {
            s.retry.max_attempts
        };
        self.max_attempts.push(attempts as i32);
        self.backoff.push(s.retry.backoff.as_str().to_owned());
        self.base_ms.push(s.retry.base_ms as i64);
        self.max_ms.push(s.retry.max_ms as i64);
        // Bounded by template validation (30 days); saturating all the same.
        let ms = |seconds: u64| seconds.saturating_mul(1000).min(i64::MAX as u64) as i64;
        self.timeout_ms.push(ms(s.timeout_seconds));
        self.queue_timeout_ms
            .push(tasker_shared::compose::queue_timeout_seconds(s, template_namespace).map(ms));
        self.parents.push(parents);
        self.batch_spec.push(made.batch_spec);
        self.on_failure.push(s.on_failure.as_str().to_owned());
        self.wait.push(s.engine_wait());
        // The task's own namespace is stored as none, so most steps store nothing.
        self.namespace
            .push(s.namespace.clone().filter(|ns| ns != template_namespace));
        self.child.push(made.child);
        self.limits.push(made.limits);
    }
}
