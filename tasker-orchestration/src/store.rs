//! PostgreSQL storage behind a narrow interface: create a task, apply a batch of results, cancel,
//! sweep, and the read models of the API. Every state change is a guarded
//! `UPDATE … WHERE state = <from> [AND attempt = <n>]`, so duplicate and stale messages change
//! nothing, and it is recorded in the append-only `transitions` table.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use tasker_shared::template::Loaded;
use tasker_shared::{
    Backoff, Outcome, RetryPolicy, StepError, StepMessage, StepResult, StepState, StepType,
    TaskState, TaskTemplate,
};

mod history;
mod read;

use history::History;
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
        let dag = &new.template.dag;
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
        .bind(t.steps.len() as i32)
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
        for (i, s) in t.steps.iter().enumerate() {
            cols.push(s, dag.parents(i).len() as i32);
        }
        sqlx::query(
            "INSERT INTO steps (id, task_id, name, handler, step_type, branches, state, attempt,
                                max_attempts, backoff, base_ms, max_ms, timeout_ms,
                                parent_count, pending_parents, publish_count, dispatched_at)
             SELECT u.id, $1, u.name, u.handler, u.step_type, u.branches,
                    CASE WHEN u.parents = 0 THEN 'enqueued' ELSE 'pending' END,
                    CASE WHEN u.parents = 0 THEN 1 ELSE 0 END,
                    u.max_attempts, u.backoff, u.base_ms, u.max_ms, u.timeout_ms,
                    u.parents, u.parents,
                    CASE WHEN u.parents = 0 THEN 1 ELSE 0 END,
                    CASE WHEN u.parents = 0 THEN clock_timestamp() END
             FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[],
                         $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::int[])
                  AS u(id, name, handler, step_type, branches, max_attempts, backoff, base_ms,
                       max_ms, timeout_ms, parents)",
        )
        .bind(task_id)
        .bind(&ids)
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
        .execute(&mut *tx)
        .await?;

        let (parents, children): (Vec<Uuid>, Vec<Uuid>) =
            dag.edges().map(|(p, c)| (ids[p], ids[c])).unzip();
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
        let roots: Vec<Uuid> = dag.roots().map(|i| ids[i]).collect();
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
        let dispatch = load_messages(&mut tx, &roots).await?;
        tx.commit().await?;
        Ok(Created {
            task_id,
            created: true,
            dispatch,
        })
    }

    /// Applies a batch of results in one transaction, retrying it as a whole on a deadlock.
    pub async fn apply_results(&self, results: &[StepResult]) -> Result<Applied> {
        let mut attempt = 0;
        loop {
            match self.apply_results_once(results).await {
                Err(e) if e.is_retryable() && attempt < 5 => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "retrying result batch");
                }
                other => return other,
            }
        }
    }

    async fn apply_results_once(&self, results: &[StepResult]) -> Result<Applied> {
        // Lock rows in one global order so two orchestrators never deadlock on the same rows.
        let mut order: Vec<&StepResult> = results.iter().collect();
        order.sort_by_key(|r| (r.task_id, r.step_id, r.attempt));
        let mut tx = self.pool.begin().await?;
        let mut batch = Batch::default();
        for r in order {
            batch.apply(&mut tx, r).await?;
        }
        let applied = batch.finish(&mut tx).await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// Moves steps whose backoff elapsed from `waiting_retry` to `enqueued` (next attempt).
    pub async fn dispatch_retries(&self, step_ids: &[Uuid]) -> Result<Vec<StepMessage>> {
        let mut tx = self.pool.begin().await?;
        let mut batch = Batch::default();
        for &id in step_ids {
            batch.ready.push((id, StepState::WaitingRetry));
        }
        let applied = batch.finish(&mut tx).await?;
        tx.commit().await?;
        Ok(applied.dispatch)
    }

    /// Cancels a running task and every step not yet terminal. Returns the task's state after
    /// the call, or `None` if there is no such task.
    pub async fn cancel_task(&self, task_id: Uuid) -> Result<Option<(TaskState, bool)>> {
        let mut tx = self.pool.begin().await?;
        let mut batch = Batch::default();
        let changed = batch
            .end_task(
                &mut tx,
                task_id,
                TaskState::Cancelled,
                None,
                "cancelled by request",
            )
            .await?;
        batch.finish(&mut tx).await?;
        tx.commit().await?;
        if changed {
            return Ok(Some((TaskState::Cancelled, true)));
        }
        let state = sqlx::query("SELECT state FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        match state {
            None => Ok(None),
            Some(row) => Ok(Some((
                parse_task_state(&row.try_get::<String, _>("state")?)?,
                false,
            ))),
        }
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
        let messages = load_messages(&mut tx, &ids).await?;
        tx.commit().await?;
        Ok(messages)
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
}

impl StepColumns {
    fn push(&mut self, s: &tasker_shared::StepTemplate, parents: i32) {
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
    }
}

/// The work of one result-batch transaction.
#[derive(Default)]
struct Batch {
    history: History,
    /// Steps to move to `enqueued`, with the state they leave.
    ready: Vec<(Uuid, StepState)>,
    /// Steps that became terminal, per task (to decrement `open_steps` once per task).
    closed: HashMap<Uuid, i32>,
    finished: Vec<(Uuid, TaskState)>,
    retries: Vec<(Uuid, Duration)>,
    accepted: usize,
    ignored: Vec<Uuid>,
}

/// A child whose parent counters were just decremented.
struct Child {
    id: Uuid,
    task_id: Uuid,
    state: StepState,
    step_type: StepType,
    pending_parents: i32,
    skipped_parents: i32,
    parent_count: i32,
}

impl Batch {
    async fn apply(&mut self, tx: &mut Transaction<'_, Postgres>, r: &StepResult) -> Result<()> {
        match &r.outcome {
            Outcome::Success { result } => self.succeed(tx, r, result).await,
            Outcome::Failure { error, retryable } => self.fail(tx, r, error, *retryable).await,
        }
    }

    async fn succeed(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
        r: &StepResult,
        result: &Value,
    ) -> Result<()> {
        let row = sqlx::query(
            "UPDATE steps SET state = 'completed', result = $3, started_at = $4, finished_at = $5,
                              worker = $6, processed_at = clock_timestamp()
             WHERE id = $1 AND attempt = $2 AND state = 'enqueued'
             RETURNING task_id, name, step_type, branches",
        )
        .bind(r.step_id)
        .bind(r.attempt as i32)
        .bind(result)
        .bind(r.started_at)
        .bind(r.finished_at)
        .bind(&r.worker)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else {
            self.ignored.push(r.step_id);
            return Ok(());
        };
        let task_id: Uuid = row.try_get("task_id")?;
        let step_type = parse_step_type(&row.try_get::<String, _>("step_type")?)?;
        if step_type == StepType::Decision {
            let declared: Vec<String> =
                serde_json::from_value(row.try_get("branches")?).unwrap_or_default();
            match chosen_branches(result, &declared) {
                Ok(chosen) => {
                    let skipped: Vec<&String> =
                        declared.iter().filter(|b| !chosen.contains(b)).collect();
                    for name in skipped {
                        let id: Option<Uuid> = sqlx::query_scalar(
                            "SELECT id FROM steps WHERE task_id = $1 AND name = $2",
                        )
                        .bind(task_id)
                        .bind(name)
                        .fetch_optional(&mut **tx)
                        .await?;
                        if let Some(id) = id {
                            self.skip(tx, task_id, id).await?;
                        }
                    }
                }
                Err(message) => {
                    // The handler ran but its answer is unusable: fail the step for good.
                    sqlx::query("UPDATE steps SET state = 'enqueued', result = NULL WHERE id = $1")
                        .bind(r.step_id)
                        .execute(&mut **tx)
                        .await?;
                    let error = StepError::new("invalid_decision", message);
                    return self.fail(tx, r, &error, false).await;
                }
            }
        }
        self.accepted += 1;
        self.history.step(
            task_id,
            r.step_id,
            Some(StepState::Enqueued),
            StepState::Completed,
            r.attempt,
            "succeeded",
        );
        self.close(task_id);
        let children = decrement_children(tx, r.step_id, false).await?;
        self.resolve(tx, children).await
    }

    async fn fail(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
        r: &StepResult,
        error: &StepError,
        retryable: bool,
    ) -> Result<()> {
        let row = sqlx::query(
            "SELECT task_id, name, max_attempts, backoff, base_ms, max_ms FROM steps
             WHERE id = $1 AND attempt = $2 AND state = 'enqueued' FOR UPDATE",
        )
        .bind(r.step_id)
        .bind(r.attempt as i32)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else {
            self.ignored.push(r.step_id);
            return Ok(());
        };
        self.accepted += 1;
        let task_id: Uuid = row.try_get("task_id")?;
        let name: String = row.try_get("name")?;
        let policy = RetryPolicy {
            max_attempts: row.try_get::<i32, _>("max_attempts")? as u32,
            backoff: Backoff::parse(&row.try_get::<String, _>("backoff")?)
                .ok_or_else(|| Error::Corrupt(format!("step {}: unknown backoff", r.step_id)))?,
            base_ms: row.try_get::<i64, _>("base_ms")? as u64,
            max_ms: row.try_get::<i64, _>("max_ms")? as u64,
        };
        let error_json = serde_json::to_value(error).unwrap_or(Value::Null);
        if retryable && policy.allows_retry_after(r.attempt) {
            let delay = policy.delay_after(r.attempt);
            sqlx::query(
                "UPDATE steps SET state = 'waiting_retry', error = $2, started_at = $3,
                                  finished_at = $4, worker = $5, processed_at = clock_timestamp(),
                                  next_attempt_at = clock_timestamp() + make_interval(secs => $6)
                 WHERE id = $1",
            )
            .bind(r.step_id)
            .bind(&error_json)
            .bind(r.started_at)
            .bind(r.finished_at)
            .bind(&r.worker)
            .bind(delay.as_secs_f64())
            .execute(&mut **tx)
            .await?;
            self.history.step(
                task_id,
                r.step_id,
                Some(StepState::Enqueued),
                StepState::WaitingRetry,
                r.attempt,
                &format!("{}: {}", error.kind, error.message),
            );
            if delay.is_zero() {
                self.ready.push((r.step_id, StepState::WaitingRetry));
            } else {
                self.retries.push((r.step_id, delay));
            }
            return Ok(());
        }
        sqlx::query(
            "UPDATE steps SET state = 'failed', error = $2, started_at = $3, finished_at = $4,
                              worker = $5, processed_at = clock_timestamp()
             WHERE id = $1",
        )
        .bind(r.step_id)
        .bind(&error_json)
        .bind(r.started_at)
        .bind(r.finished_at)
        .bind(&r.worker)
        .execute(&mut **tx)
        .await?;
        let reason = if retryable {
            format!("attempts exhausted ({}): {}", r.attempt, error.message)
        } else {
            format!("permanent failure: {}", error.message)
        };
        self.history.step(
            task_id,
            r.step_id,
            Some(StepState::Enqueued),
            StepState::Failed,
            r.attempt,
            &reason,
        );
        let task_error = json!({ "step": name, "attempt": r.attempt, "error": error_json });
        self.end_task(tx, task_id, TaskState::Error, Some(task_error), &reason)
            .await?;
        Ok(())
    }

    /// Ends a running task (error or cancel): the task and every open step become terminal.
    /// Returns false if the task was not running.
    async fn end_task(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
        task_id: Uuid,
        to: TaskState,
        error: Option<Value>,
        reason: &str,
    ) -> Result<bool> {
        let updated = sqlx::query(
            "UPDATE tasks SET state = $2, error = $3, completed_at = clock_timestamp()
             WHERE id = $1 AND state = 'running' RETURNING id",
        )
        .bind(task_id)
        .bind(to.as_str())
        .bind(&error)
        .fetch_optional(&mut **tx)
        .await?;
        if updated.is_none() {
            return Ok(false);
        }
        let rows = sqlx::query(
            "UPDATE steps s SET state = 'cancelled'
             FROM (SELECT id, state FROM steps WHERE task_id = $1
                   AND state IN ('pending', 'enqueued', 'waiting_retry') FOR UPDATE) old
             WHERE s.id = old.id
             RETURNING s.id, old.state AS from_state, s.attempt",
        )
        .bind(task_id)
        .fetch_all(&mut **tx)
        .await?;
        for row in rows {
            let from = parse_step_state(&row.try_get::<String, _>("from_state")?)?;
            self.history.step(
                task_id,
                row.try_get("id")?,
                Some(from),
                StepState::Cancelled,
                row.try_get::<i32, _>("attempt")? as u32,
                reason,
            );
        }
        self.history
            .task(task_id, Some(TaskState::Running), to, reason);
        self.finished.push((task_id, to));
        Ok(true)
    }

    /// Skips a pending step and propagates to children that can no longer run.
    async fn skip(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
        task_id: Uuid,
        step_id: Uuid,
    ) -> Result<()> {
        let mut queue = vec![step_id];
        while let Some(id) = queue.pop() {
            let skipped = sqlx::query(
                "UPDATE steps SET state = 'skipped', processed_at = clock_timestamp()
                 WHERE id = $1 AND state = 'pending' RETURNING id",
            )
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
            if skipped.is_none() {
                continue;
            }
            self.history.step(
                task_id,
                id,
                Some(StepState::Pending),
                StepState::Skipped,
                0,
                "branch not chosen",
            );
            self.close(task_id);
            for child in decrement_children(tx, id, true).await? {
                match self.decide(&child) {
                    Some(true) => self.ready.push((child.id, StepState::Pending)),
                    Some(false) => queue.push(child.id),
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// For children whose last parent just resolved: ready them or skip them.
    async fn resolve(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
        children: Vec<Child>,
    ) -> Result<()> {
        for child in children {
            match self.decide(&child) {
                Some(true) => self.ready.push((child.id, StepState::Pending)),
                Some(false) => self.skip(tx, child.task_id, child.id).await?,
                None => {}
            }
        }
        Ok(())
    }

    /// `Some(true)` to run, `Some(false)` to skip, `None` while parents are still open.
    fn decide(&self, c: &Child) -> Option<bool> {
        if c.state != StepState::Pending || c.pending_parents > 0 {
            return None;
        }
        Some(match c.step_type {
            StepType::Convergence => c.skipped_parents < c.parent_count,
            _ => c.skipped_parents == 0,
        })
    }

    fn close(&mut self, task_id: Uuid) {
        *self.closed.entry(task_id).or_default() += 1;
    }

    /// Dispatches ready steps, closes finished tasks, writes history and notifications.
    async fn finish(mut self, tx: &mut Transaction<'_, Postgres>) -> Result<Applied> {
        let mut dispatch = Vec::new();
        if !self.ready.is_empty() {
            let ids: Vec<Uuid> = self.ready.iter().map(|(id, _)| *id).collect();
            let rows = sqlx::query(
                "UPDATE steps SET state = 'enqueued', attempt = attempt + 1, publish_count = 1,
                                  dispatched_at = clock_timestamp(), next_attempt_at = NULL
                 WHERE id = ANY($1) AND state IN ('pending', 'waiting_retry')
                 RETURNING id, task_id, attempt",
            )
            .bind(&ids)
            .fetch_all(&mut **tx)
            .await?;
            let mut enqueued = Vec::with_capacity(rows.len());
            for row in rows {
                let id: Uuid = row.try_get("id")?;
                let from = self
                    .ready
                    .iter()
                    .find(|(r, _)| *r == id)
                    .map(|(_, s)| *s)
                    .unwrap_or(StepState::Pending);
                self.history.step(
                    row.try_get("task_id")?,
                    id,
                    Some(from),
                    StepState::Enqueued,
                    row.try_get::<i32, _>("attempt")? as u32,
                    if from == StepState::Pending {
                        "parents done"
                    } else {
                        "retry"
                    },
                );
                enqueued.push(id);
            }
            dispatch = load_messages(tx, &enqueued).await?;
        }
        let mut closed: Vec<(Uuid, i32)> = self.closed.drain().collect();
        closed.sort();
        for (task_id, n) in closed {
            let row = sqlx::query(
                "UPDATE tasks SET open_steps = open_steps - $2,
                     state = CASE WHEN open_steps - $2 <= 0 AND state = 'running'
                                  THEN 'complete' ELSE state END,
                     completed_at = CASE WHEN open_steps - $2 <= 0 AND state = 'running'
                                         THEN clock_timestamp() ELSE completed_at END
                 WHERE id = $1
                 RETURNING open_steps, state",
            )
            .bind(task_id)
            .bind(n)
            .fetch_one(&mut **tx)
            .await?;
            let open: i32 = row.try_get("open_steps")?;
            let state: String = row.try_get("state")?;
            if open <= 0 && state == "complete" && open + n > 0 {
                self.history.task(
                    task_id,
                    Some(TaskState::Running),
                    TaskState::Complete,
                    "all steps done",
                );
                self.finished.push((task_id, TaskState::Complete));
            }
        }
        if !self.finished.is_empty() {
            let payloads: Vec<String> = self
                .finished
                .iter()
                .map(|(id, st)| format!("{id}:{st}"))
                .collect();
            sqlx::query("SELECT pg_notify($1, p) FROM UNNEST($2::text[]) AS p")
                .bind(TASK_FINISHED_CHANNEL)
                .bind(&payloads)
                .execute(&mut **tx)
                .await?;
        }
        self.history.flush(tx).await?;
        Ok(Applied {
            accepted: self.accepted,
            ignored: self.ignored,
            dispatch,
            finished: self.finished,
            retries: self.retries,
        })
    }
}

/// Decrements the parent counters of `parent`'s children (and the skipped counter when the
/// parent was skipped). Constant work per edge.
async fn decrement_children(
    tx: &mut Transaction<'_, Postgres>,
    parent: Uuid,
    skipped: bool,
) -> Result<Vec<Child>> {
    let rows = sqlx::query(
        "UPDATE steps s SET pending_parents = s.pending_parents - 1,
                            skipped_parents = s.skipped_parents + $2
         FROM step_edges e
         WHERE e.parent_id = $1 AND s.id = e.child_id
         RETURNING s.id, s.task_id, s.state, s.step_type, s.pending_parents, s.skipped_parents,
                   s.parent_count",
    )
    .bind(parent)
    .bind(i32::from(skipped))
    .fetch_all(&mut **tx)
    .await?;
    rows.into_iter()
        .map(|row| {
            Ok(Child {
                id: row.try_get("id")?,
                task_id: row.try_get("task_id")?,
                state: parse_step_state(&row.try_get::<String, _>("state")?)?,
                step_type: parse_step_type(&row.try_get::<String, _>("step_type")?)?,
                pending_parents: row.try_get("pending_parents")?,
                skipped_parents: row.try_get("skipped_parents")?,
                parent_count: row.try_get("parent_count")?,
            })
        })
        .collect()
}

/// Builds the self-contained messages of enqueued steps: task context and parent results.
async fn load_messages(
    tx: &mut Transaction<'_, Postgres>,
    step_ids: &[Uuid],
) -> Result<Vec<StepMessage>> {
    if step_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(
        "SELECT s.id, s.task_id, s.name, s.handler, s.attempt, s.max_attempts, s.timeout_ms,
                s.dispatched_at, t.namespace, t.name AS task_name, t.context,
                COALESCE((SELECT jsonb_object_agg(p.name, p.result)
                          FROM step_edges e JOIN steps p ON p.id = e.parent_id
                          WHERE e.child_id = s.id AND p.state = 'completed'), '{}'::jsonb)
                    AS parent_results
         FROM steps s JOIN tasks t ON t.id = s.task_id
         WHERE s.id = ANY($1)",
    )
    .bind(step_ids)
    .fetch_all(&mut **tx)
    .await?;
    rows.iter().map(message_from_row).collect()
}

fn message_from_row(row: &PgRow) -> Result<StepMessage> {
    let parents: Value = row.try_get("parent_results")?;
    let parent_results = match parents {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Ok(StepMessage {
        task_id: row.try_get("task_id")?,
        step_id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        task_name: row.try_get("task_name")?,
        step_name: row.try_get("name")?,
        handler: row.try_get("handler")?,
        attempt: row.try_get::<i32, _>("attempt")? as u32,
        max_attempts: row.try_get::<i32, _>("max_attempts")? as u32,
        context: row.try_get("context")?,
        parent_results,
        dispatched_at: row
            .try_get::<Option<DateTime<Utc>>, _>("dispatched_at")?
            .unwrap_or_else(Utc::now),
        timeout_ms: row.try_get::<i64, _>("timeout_ms")? as u64,
    })
}

/// The branches a decision result names: `{"branches": ["a", …]}`, each one declared.
fn chosen_branches(
    result: &Value,
    declared: &[String],
) -> std::result::Result<Vec<String>, String> {
    let Some(list) = result.get("branches").and_then(Value::as_array) else {
        return Err(format!(
            "a decision handler must return {{\"branches\": [...]}} naming some of {declared:?}"
        ));
    };
    let mut chosen = Vec::with_capacity(list.len());
    for b in list {
        match b.as_str() {
            Some(name) if declared.iter().any(|d| d == name) => chosen.push(name.to_owned()),
            _ => {
                return Err(format!(
                    "decision chose {b}, which is not one of its branches {declared:?}"
                ));
            }
        }
    }
    Ok(chosen)
}

fn parse_step_state(s: &str) -> Result<StepState> {
    StepState::parse(s).ok_or_else(|| Error::Corrupt(format!("unknown step state {s:?}")))
}

fn parse_step_type(s: &str) -> Result<StepType> {
    StepType::parse(s).ok_or_else(|| Error::Corrupt(format!("unknown step type {s:?}")))
}

fn parse_task_state(s: &str) -> Result<TaskState> {
    TaskState::parse(s).ok_or_else(|| Error::Corrupt(format!("unknown task state {s:?}")))
}
