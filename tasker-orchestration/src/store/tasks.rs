//! Creating and cancelling tasks: `tasker_create_tasks` inserts tasks, their steps and edges in
//! one statement (root steps already enqueued); `tasker_end_task` cancels a running one.

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
    /// The API token (its id) the task is created on behalf of: its work started later (its
    /// children) is judged with it again. A child's is its root's; `None` without tokens.
    pub token_id: Option<i64>,
}

/// The parent step attempt a child task is started by.
#[derive(Debug, Clone, Copy)]
pub struct ParentLink {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub attempt: i32,
    /// The child's depth (its parent's + 1).
    pub depth: i32,
    /// The task at the top of the parent's tree (the parent itself when nobody started it).
    pub root: Uuid,
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

/// What `tasker_create_tasks` answered for one task of a batch.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct BatchAnswer {
    pub created: bool,
    /// The task created, or the one its idempotency key created before.
    #[serde(default)]
    pub task_id: Uuid,
    /// For an existing task, its template and context (nil and null for one created now).
    #[serde(default)]
    pub template_id: Uuid,
    #[serde(default)]
    pub context: Value,
    #[serde(default)]
    pub parent_gone: bool,
}

/// The JSON answer of `tasker_create_tasks`.
#[derive(serde::Deserialize)]
struct CreatedRows {
    tasks: Vec<BatchAnswer>,
    #[serde(default)]
    dispatch: Vec<StepMessage>,
    /// Roots with limits: the timed waits of those throttled, and those beyond the first page.
    #[serde(flatten)]
    claimed: super::results::Claimed,
    #[serde(default)]
    deferred: Vec<Uuid>,
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

    /// Creates a task, its steps and edges in one statement (`tasker_create_tasks`). Root
    /// steps are stored already `enqueued` (attempt 1) and returned for publishing.
    pub async fn create_task(&self, new: NewTask<'_>) -> Result<Created> {
        create_task_on(&mut *self.pool.acquire().await?, new).await
    }

    /// Creates every task of `batch` in one statement and one transaction; answers each in
    /// the order added, with what the commit leaves to do for all of them.
    pub async fn create_tasks(&self, batch: CreateBatch) -> Result<(Vec<BatchAnswer>, Effects)> {
        batch.run(&mut *self.pool.acquire().await?).await
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
    let (template_id, context) = (new.template_id, new.context.clone());
    let mut batch = CreateBatch::default();
    batch.add(new).map_err(Error::Limits)?;
    let (answers, effects) = batch.run(conn).await?;
    let Some(answer) = answers.into_iter().next() else {
        return Err(Error::Answer {
            function: "tasker_create_tasks",
            source: serde::de::Error::custom("no task in the answer"),
        });
    };
    let (template_id, context) = if answer.created {
        (template_id, context)
    } else {
        (answer.template_id, answer.context)
    };
    Ok(Created {
        task_id: answer.task_id,
        created: answer.created,
        template_id,
        context,
        parent_gone: answer.parent_gone,
        effects,
    })
}

/// Tasks to create in one `tasker_create_tasks` call: each task's columns, and its steps' and
/// edges' with the position of their task.
#[derive(Debug, Default)]
pub struct CreateBatch {
    id: Vec<Uuid>,
    template_id: Vec<Uuid>,
    namespace: Vec<String>,
    name: Vec<String>,
    version: Vec<String>,
    context: Vec<Value>,
    idempotency_key: Vec<Option<String>>,
    run_at: Vec<Option<chrono::DateTime<chrono::Utc>>>,
    parent_task: Vec<Option<Uuid>>,
    parent_step: Vec<Option<Uuid>>,
    parent_attempt: Vec<Option<i32>>,
    depth: Vec<Option<i32>>,
    on_parent_cancel: Vec<Option<&'static str>>,
    priority: Vec<i16>,
    steps: Vec<i32>,
    /// What else each task records (`tasker_create_tasks`'s `t_meta`).
    meta: Vec<Value>,
    step_columns: StepColumns,
    edge_task: Vec<i32>,
    edge_parent: Vec<Uuid>,
    edge_child: Vec<Uuid>,
}

/// A `tasker_create_tasks` call being built: its parameters are bound group by group, in the
/// function's order (the tasks', then their steps', then their edges' columns).
type CreateCall<'q> =
    sqlx::query::QueryScalar<'q, sqlx::Postgres, Value, sqlx::postgres::PgArguments>;

impl CreateBatch {
    /// Tasks added so far.
    pub fn len(&self) -> usize {
        self.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// Plans `new` into the batch; refused, with nothing added, when its context lacks a key
    /// its limits read (or has one too long).
    pub fn add(
        &mut self,
        new: NewTask<'_>,
    ) -> std::result::Result<(), tasker_shared::flow::KeyError> {
        let t = &new.template.template;
        let plan = Plan::new(new.template);
        let limits = t
            .steps
            .iter()
            .map(|s| tasker_shared::template::resolve_limits(t, s, &new.context))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let ids: Vec<Uuid> = t.steps.iter().map(|_| Uuid::now_v7()).collect();
        let position = self.id.len() as i32 + 1;
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
            self.step_columns.task.push(position);
            self.step_columns.push(
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
        for &(p, c) in &plan.edges {
            self.edge_task.push(position);
            self.edge_parent.push(ids[p]);
            self.edge_child.push(ids[c]);
        }
        self.id.push(Uuid::now_v7());
        self.template_id.push(new.template_id);
        self.namespace.push(t.namespace.clone());
        self.name.push(t.name.clone());
        self.version.push(t.version.clone());
        self.context.push(new.context);
        self.idempotency_key.push(new.idempotency_key);
        self.run_at.push(new.run_at);
        let parent = new.parent;
        self.parent_task.push(parent.map(|p| p.task_id));
        self.parent_step.push(parent.map(|p| p.step_id));
        self.parent_attempt.push(parent.map(|p| p.attempt));
        self.depth.push(parent.map(|p| p.depth));
        self.on_parent_cancel
            .push(parent.map(|p| p.on_parent_cancel.as_str()));
        self.priority.push(new.priority.rank());
        self.steps.push(plan.steps.len() as i32);
        self.meta.push(json!({
            "token_id": new.token_id,
            "root_task_id": parent.map(|p| p.root),
        }));
        Ok(())
    }

    fn bind<'q>(&'q self, query: CreateCall<'q>) -> CreateCall<'q> {
        let query = query
            .bind(&self.id)
            .bind(&self.template_id)
            .bind(&self.namespace)
            .bind(&self.name)
            .bind(&self.version)
            .bind(&self.context)
            .bind(&self.idempotency_key)
            .bind(&self.run_at)
            .bind(&self.parent_task)
            .bind(&self.parent_step)
            .bind(&self.parent_attempt)
            .bind(&self.depth)
            .bind(&self.on_parent_cancel)
            .bind(&self.priority)
            .bind(&self.steps);
        self.step_columns
            .bind(query)
            .bind(&self.edge_task)
            .bind(&self.edge_parent)
            .bind(&self.edge_child)
            .bind(&self.meta)
    }

    /// Creates the batch's tasks in one statement on `conn`.
    async fn run(self, conn: &mut sqlx::PgConnection) -> Result<(Vec<BatchAnswer>, Effects)> {
        let query = sqlx::query_scalar(
            "SELECT tasker_create_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                        $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
                                        $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35,
                                        $36, $37, $38)",
        );
        let answer: Value = self.bind(query).fetch_one(conn).await?;
        let rows: CreatedRows = decode("tasker_create_tasks", answer)?;
        if rows.tasks.len() != self.id.len() {
            return Err(Error::Answer {
                function: "tasker_create_tasks",
                source: serde::de::Error::custom(format!(
                    "{} tasks answered for {}",
                    rows.tasks.len(),
                    self.id.len()
                )),
            });
        }
        let now = chrono::Utc::now();
        let mut created = Vec::new();
        let mut wakes = Vec::new();
        for (i, a) in rows.tasks.iter().enumerate() {
            if a.created {
                created.push(self.namespace[i].clone());
                // A task that starts later: look at the timers when its time comes.
                wakes.extend(self.run_at[i].and_then(|at| (at - now).to_std().ok()));
            }
        }
        // And when throttled roots may start.
        wakes.extend(rows.claimed.wakes());
        let effects = Effects {
            dispatch: rows.dispatch,
            deferred: rows.deferred,
            throttle_waits: rows.claimed.waits(),
            created,
            wakes,
            ..Effects::default()
        };
        Ok((rows.tasks, effects))
    }
}

/// What the task's creation made of a step beyond its template: a batchable step's batch spec,
/// a child step's pinned child, the limits its keys resolved to.
struct Made {
    batch_spec: Option<Value>,
    child: Option<Value>,
    limits: Option<Value>,
}

/// Column vectors for the bulk `unnest` insert of the steps: `tasker_create_tasks`' `$16`
/// to `$34` (the edges' three follow).
#[derive(Debug, Default)]
struct StepColumns {
    /// The position of each step's task in the batch (1-based).
    task: Vec<i32>,
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
            .bind(&self.task)
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
            .push(tasker_shared::template::queue_timeout_seconds(s, template_namespace).map(ms));
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
