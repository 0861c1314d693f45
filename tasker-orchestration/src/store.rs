//! PostgreSQL storage behind a narrow interface: create a task, apply a batch of results, cancel,
//! sweep, and the read models of the API. Every state change is a guarded
//! `UPDATE … WHERE state = <from> [AND attempt = <n>]`, so duplicate and stale messages change
//! nothing, and it is recorded in the append-only `transitions` table.

use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};
use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions};
use uuid::Uuid;

use tasker_shared::template::Loaded;
use tasker_shared::{
    Outcome, StepError, StepMessage, StepResult, StepState, TaskState, TaskTemplate,
};

mod history;
mod plan;
mod read;

use history::History;
use plan::Plan;
pub use read::{StepView, TaskFilter, TaskView, TemplateView};

/// Channel of the `pg_notify` sent when a task reaches a terminal state; the payload is
/// `<task id>:<state>`.
pub const TASK_FINISHED_CHANNEL: &str = "tasker_task_finished";

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
}

impl Error {
    /// A deadlock or serialization failure: the transaction can be retried as a whole.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Db(sqlx::Error::Database(e)) => {
                matches!(e.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

/// A task to create from a registered template.
#[derive(Debug)]
pub struct NewTask<'a> {
    pub template_id: Uuid,
    pub template: &'a Loaded,
    pub context: Value,
    pub idempotency_key: Option<String>,
}

/// What creating a task did.
#[derive(Debug)]
pub struct Created {
    pub task_id: Uuid,
    /// False when the idempotency key matched an existing task, which is returned instead.
    pub created: bool,
    /// Root steps to publish, now that the transaction committed.
    pub dispatch: Vec<StepMessage>,
}

/// What applying a batch of results did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Results that changed state.
    pub accepted: usize,
    /// Steps whose result was a duplicate or stale (wrong attempt, step no longer in flight).
    pub ignored: Vec<Uuid>,
    /// Steps made ready (or retried at once), to publish now that the transaction committed.
    pub dispatch: Vec<StepMessage>,
    /// Tasks that reached a terminal state.
    pub finished: Vec<(Uuid, TaskState)>,
    /// Steps waiting for a backoff before their next attempt.
    pub retries: Vec<(Uuid, Duration)>,
}

impl Store {
    /// Connects and applies pending migrations.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Store { pool })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Registers (or refreshes) a template; returns its id.
    pub async fn register_template(&self, template: &TaskTemplate) -> Result<Uuid> {
        let definition = serde_json::to_value(template)
            .map_err(|e| Error::Corrupt(format!("template serialization: {e}")))?;
        let row = sqlx::query(
            "INSERT INTO task_templates (id, namespace, name, version, description, definition)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (namespace, name, version)
             DO UPDATE SET description = EXCLUDED.description, definition = EXCLUDED.definition
             RETURNING id",
        )
        .bind(Uuid::now_v7())
        .bind(&template.namespace)
        .bind(&template.name)
        .bind(&template.version)
        .bind(&template.description)
        .bind(definition)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("id")?)
    }

    /// Every registered template, oldest registration first.
    pub async fn templates(&self) -> Result<Vec<(Uuid, TaskTemplate)>> {
        let rows = sqlx::query("SELECT id, definition FROM task_templates ORDER BY registered_at")
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter()
            .map(|row| {
                let id: Uuid = row.try_get("id")?;
                let def: Value = row.try_get("definition")?;
                let t = serde_json::from_value(def)
                    .map_err(|e| Error::Corrupt(format!("template {id}: {e}")))?;
                Ok((id, t))
            })
            .collect()
    }

    /// Creates a task, its steps and edges in one transaction. Root steps are stored already
    /// `enqueued` (attempt 1) and returned for publishing.
    pub async fn create_task(&self, new: NewTask<'_>) -> Result<Created> {
        let t = &new.template.template;
        let plan = Plan::new(new.template);
        let task_id = Uuid::now_v7();
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO tasks (id, template_id, namespace, name, version, state, context,
                                idempotency_key, open_steps)
             VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8)
             ON CONFLICT (idempotency_key) DO NOTHING
             RETURNING id",
        )
        .bind(task_id)
        .bind(new.template_id)
        .bind(&t.namespace)
        .bind(&t.name)
        .bind(&t.version)
        .bind(&new.context)
        .bind(&new.idempotency_key)
        .bind(plan.steps.len() as i32)
        .fetch_optional(&mut *tx)
        .await?;
        if inserted.is_none() {
            tx.rollback().await?;
            let row = sqlx::query("SELECT id FROM tasks WHERE idempotency_key = $1")
                .bind(&new.idempotency_key)
                .fetch_one(&self.pool)
                .await?;
            return Ok(Created {
                task_id: row.try_get("id")?,
                created: false,
                dispatch: Vec::new(),
            });
        }

        let ids: Vec<Uuid> = t.steps.iter().map(|_| Uuid::now_v7()).collect();
        let mut cols = StepColumns::default();
        for &i in &plan.steps {
            cols.push(
                ids[i],
                &t.steps[i],
                plan.parent_count(i) as i32,
                Plan::batch_spec(new.template, i),
            );
        }
        sqlx::query(
            "INSERT INTO steps (id, task_id, name, handler, step_type, branches, state, attempt,
                                max_attempts, backoff, base_ms, max_ms, timeout_ms,
                                parent_count, pending_parents, publish_count, dispatched_at,
                                batch_spec, on_failure)
             SELECT u.id, $1, u.name, u.handler, u.step_type, u.branches,
                    CASE WHEN u.parents = 0 THEN 'enqueued' ELSE 'pending' END,
                    CASE WHEN u.parents = 0 THEN 1 ELSE 0 END,
                    u.max_attempts, u.backoff, u.base_ms, u.max_ms, u.timeout_ms,
                    u.parents, u.parents,
                    CASE WHEN u.parents = 0 THEN 1 ELSE 0 END,
                    CASE WHEN u.parents = 0 THEN clock_timestamp() END,
                    u.batch_spec, u.on_failure
             FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[],
                         $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::int[],
                         $13::jsonb[], $14::text[])
                  AS u(id, name, handler, step_type, branches, max_attempts, backoff, base_ms,
                       max_ms, timeout_ms, parents, batch_spec, on_failure)",
        )
        .bind(task_id)
        .bind(&cols.id)
        .bind(&cols.name)
        .bind(&cols.handler)
        .bind(&cols.step_type)
        .bind(&cols.branches)
        .bind(&cols.max_attempts)
        .bind(&cols.backoff)
        .bind(&cols.base_ms)
        .bind(&cols.max_ms)
        .bind(&cols.timeout_ms)
        .bind(&cols.parents)
        .bind(&cols.batch_spec)
        .bind(&cols.on_failure)
        .execute(&mut *tx)
        .await?;

        let (parents, children): (Vec<Uuid>, Vec<Uuid>) =
            plan.edges.iter().map(|&(p, c)| (ids[p], ids[c])).unzip();
        if !parents.is_empty() {
            sqlx::query(
                "INSERT INTO step_edges (task_id, parent_id, child_id)
                 SELECT $1, p, c FROM UNNEST($2::uuid[], $3::uuid[]) AS e(p, c)",
            )
            .bind(task_id)
            .bind(&parents)
            .bind(&children)
            .execute(&mut *tx)
            .await?;
        }

        let mut history = History::default();
        history.task(task_id, None, TaskState::Running, "created");
        let roots: Vec<Uuid> = plan
            .steps
            .iter()
            .filter(|&&i| plan.parent_count(i) == 0)
            .map(|&i| ids[i])
            .collect();
        for &root in &roots {
            history.step(
                task_id,
                root,
                Some(StepState::Pending),
                StepState::Enqueued,
                1,
                "root step",
            );
        }
        history.flush(&mut tx).await?;
        let messages: Value = sqlx::query_scalar("SELECT tasker_step_messages($1)")
            .bind(&roots)
            .fetch_one(&mut *tx)
            .await?;
        let dispatch = parse_messages(messages)?;
        tx.commit().await?;
        Ok(Created {
            task_id,
            created: true,
            dispatch,
        })
    }

    /// Applies a batch of results in one statement (`tasker_apply_results`, one round trip
    /// and one commit), retrying it as a whole on a deadlock.
    pub async fn apply_results(&self, results: &[StepResult]) -> Result<Applied> {
        let mut attempt = 0;
        loop {
            let outcome: std::result::Result<Value, sqlx::Error> =
                sqlx::query_scalar("SELECT tasker_apply_results($1)")
                    .bind(sqlx::types::Json(results))
                    .fetch_one(&self.pool)
                    .await;
            match outcome.map_err(Error::from) {
                Err(e) if e.is_retryable() && attempt < 5 => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "retrying result batch");
                }
                Err(e) => return Err(e),
                Ok(v) => return parse_applied(v),
            }
        }
    }

    /// Moves steps whose backoff elapsed from `waiting_retry` to `enqueued` (next attempt).
    pub async fn dispatch_retries(&self, step_ids: &[Uuid]) -> Result<Vec<StepMessage>> {
        let v: Value = sqlx::query_scalar("SELECT tasker_dispatch($1)")
            .bind(step_ids)
            .fetch_one(&self.pool)
            .await?;
        parse_messages(v)
    }

    /// Cancels a running task and every step not yet terminal. Returns the task's state after
    /// the call and whether this call cancelled it, or `None` if there is no such task.
    pub async fn cancel_task(&self, task_id: Uuid) -> Result<Option<(TaskState, bool)>> {
        let cancelled: bool = sqlx::query_scalar(
            "SELECT tasker_end_task($1, 'cancelled', NULL, 'cancelled by request')",
        )
        .bind(task_id)
        .fetch_one(&self.pool)
        .await?;
        if cancelled {
            return Ok(Some((TaskState::Cancelled, true)));
        }
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        state
            .map(|s| {
                TaskState::parse(&s)
                    .map(|st| (st, false))
                    .ok_or_else(|| Error::Corrupt(format!("unknown task state {s:?}")))
            })
            .transpose()
    }

    /// Steps in flight past their deadline (plus `grace`), as synthetic timeout results to
    /// apply like any other result.
    pub async fn overdue(&self, grace: Duration, limit: i64) -> Result<Vec<StepResult>> {
        let rows = sqlx::query(
            "SELECT id, task_id, attempt, dispatched_at, timeout_ms FROM steps
             WHERE state = 'enqueued'
               AND dispatched_at + make_interval(secs => (timeout_ms + $1)::float8 / 1000)
                   < clock_timestamp()
             ORDER BY dispatched_at LIMIT $2",
        )
        .bind(grace.as_millis() as i64)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let now = Utc::now();
        rows.into_iter()
            .map(|row| {
                let timeout_ms: i64 = row.try_get("timeout_ms")?;
                Ok(StepResult {
                    task_id: row.try_get("task_id")?,
                    step_id: row.try_get("id")?,
                    attempt: row.try_get::<i32, _>("attempt")? as u32,
                    outcome: Outcome::Failure {
                        error: StepError::new(
                            "timeout",
                            format!("no result within the step's {timeout_ms} ms deadline"),
                        ),
                        retryable: true,
                    },
                    started_at: row.try_get("dispatched_at")?,
                    finished_at: now,
                    worker: "sweeper".into(),
                })
            })
            .collect()
    }

    /// Steps enqueued longer than `visibility` that were published only once: publish them once
    /// more (a crash between commit and publish loses the first publication).
    pub async fn republish(&self, visibility: Duration, limit: i64) -> Result<Vec<StepMessage>> {
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query(
            "UPDATE steps SET publish_count = publish_count + 1
             WHERE id IN (SELECT id FROM steps
                          WHERE state = 'enqueued' AND publish_count = 1
                            AND dispatched_at < clock_timestamp() - make_interval(secs => $1)
                          ORDER BY dispatched_at LIMIT $2
                          FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .bind(visibility.as_secs_f64())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let ids: Vec<Uuid> = rows
            .iter()
            .map(|r| r.try_get("id"))
            .collect::<std::result::Result<_, _>>()?;
        let messages: Value = sqlx::query_scalar("SELECT tasker_step_messages($1)")
            .bind(&ids)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        parse_messages(messages)
    }

    /// Steps whose backoff has elapsed (the orchestrator that scheduled them may have died).
    pub async fn due_retries(&self, limit: i64) -> Result<Vec<Uuid>> {
        let rows = sqlx::query(
            "SELECT id FROM steps WHERE state = 'waiting_retry' AND next_attempt_at <= clock_timestamp()
             ORDER BY next_attempt_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get("id"))
            .collect::<std::result::Result<_, _>>()?)
    }
}

/// Column vectors for the bulk `UNNEST` insert of a task's steps.
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
    parents: Vec<i32>,
    batch_spec: Vec<Option<Value>>,
    on_failure: Vec<String>,
}

impl StepColumns {
    fn push(
        &mut self,
        id: Uuid,
        s: &tasker_shared::StepTemplate,
        parents: i32,
        batch_spec: Option<Value>,
    ) {
        self.id.push(id);
        self.name.push(s.name.clone());
        self.handler.push(s.handler.clone());
        self.step_type.push(s.step_type.as_str().to_owned());
        self.branches.push(json!(s.branches));
        self.max_attempts.push(s.retry.max_attempts as i32);
        self.backoff.push(s.retry.backoff.as_str().to_owned());
        self.base_ms.push(s.retry.base_ms as i64);
        self.max_ms.push(s.retry.max_ms as i64);
        self.timeout_ms
            .push((s.timeout_seconds.saturating_mul(1000)).min(i64::MAX as u64) as i64);
        self.parents.push(parents);
        self.batch_spec.push(batch_spec);
        self.on_failure.push(s.on_failure.as_str().to_owned());
    }
}

fn parse_messages(v: Value) -> Result<Vec<StepMessage>> {
    serde_json::from_value(v).map_err(|e| Error::Corrupt(format!("step messages: {e}")))
}

/// The JSON answer of `tasker_apply_results`.
#[derive(serde::Deserialize)]
struct AppliedRow {
    accepted: usize,
    ignored: Vec<Uuid>,
    dispatch: Vec<StepMessage>,
    finished: Vec<FinishedRow>,
    retries: Vec<RetryRow>,
}

#[derive(serde::Deserialize)]
struct FinishedRow {
    task_id: Uuid,
    state: String,
}

#[derive(serde::Deserialize)]
struct RetryRow {
    step_id: Uuid,
    delay_ms: u64,
}

fn parse_applied(v: Value) -> Result<Applied> {
    let row: AppliedRow = serde_json::from_value(v)
        .map_err(|e| Error::Corrupt(format!("tasker_apply_results answer: {e}")))?;
    let finished = row
        .finished
        .into_iter()
        .map(|f| {
            TaskState::parse(&f.state)
                .map(|s| (f.task_id, s))
                .ok_or_else(|| Error::Corrupt(format!("unknown task state {:?}", f.state)))
        })
        .collect::<Result<_>>()?;
    Ok(Applied {
        accepted: row.accepted,
        ignored: row.ignored,
        dispatch: row.dispatch,
        finished,
        retries: row
            .retries
            .into_iter()
            .map(|r| (r.step_id, Duration::from_millis(r.delay_ms)))
            .collect(),
    })
}
