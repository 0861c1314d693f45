//! PostgreSQL storage behind a narrow interface: create a task, apply a batch of results, cancel,
//! sweep, and the read models of the API.
//!
//! The engine — every step and task transition — lives in PostgreSQL, in the functions of
//! `sql/` (`functions`); this module calls them and turns their answers into
//! [`Effects`]. Every state change there is a guarded
//! `UPDATE … WHERE state = <from> [AND attempt = <n>]`, so duplicate and stale messages change
//! nothing, and it is recorded in the append-only `transitions` table.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::FromRow;
use sqlx::postgres::{PgPool, PgPoolOptions};
use uuid::Uuid;

use tasker_shared::plan::Plan;
use tasker_shared::template::Loaded;
use tasker_shared::{StepMessage, StepResult, TaskState};

use crate::effects::{Effects, Rejected, ResultCounts};

mod dead_letters;
mod functions;
mod read;
mod templates;
mod tokens;

pub use dead_letters::{DeadLetter, DeadLetterView, NewDeadLetter};
pub use read::{StepView, TaskFilter, TaskView};
pub use templates::{Registration, TEMPLATE_REGISTERED_CHANNEL, TemplateFilter, TemplateView};
pub use tokens::{CreateError, NewToken, Principal, Scope, TokenView};

/// Channel of the `pg_notify` sent when a task reaches a terminal state; the payload is
/// `<task id>:<state>`.
pub const TASK_FINISHED_CHANNEL: &str = "tasker_task_finished";

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database cannot be reached (connection refused or lost, pool exhausted, server
    /// shutting down): worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The database answered with an error: a bug or bad data, not worth retrying as is.
    #[error("database: {0}")]
    Query(#[source] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("creating SQL function {name}: {source}")]
    Function {
        name: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
}

impl Error {
    /// Sorts a driver error into [`Error::Unavailable`] or [`Error::Query`] by its kind and,
    /// for server errors, by SQLSTATE class, never by message text.
    pub fn from_sqlx(e: sqlx::Error) -> Self {
        let unavailable = match &e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                // 08: connection exception; 57P0x: admin/crash shutdown, cannot connect now;
                // 53300: too many connections.
                c.starts_with("08") || c.starts_with("57P0") || c == "53300"
            }),
            _ => false,
        };
        if unavailable {
            Error::Unavailable(e)
        } else {
            Error::Query(e)
        }
    }

    /// A deadlock or serialization failure: the transaction can be retried as a whole.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Query(sqlx::Error::Database(e)) => {
                matches!(e.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::from_sqlx(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
    /// This orchestrator's id: every step it dispatches records it (`steps.dispatched_by`,
    /// through the `tasker.orchestrator` setting of each pooled connection).
    instance: Uuid,
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
    /// The template and context of the task returned (the existing one for a repeated key).
    pub template_id: Uuid,
    pub context: Value,
    /// Root steps to publish and the creation to count, now that the transaction committed.
    pub effects: Effects,
}

/// The JSON answer of `tasker_create_task`.
#[derive(serde::Deserialize)]
struct CreatedRow {
    created: bool,
    task_id: Uuid,
    template_id: Uuid,
    context: Value,
    dispatch: Vec<StepMessage>,
}

/// The JSON answer of `tasker_dispatch`: the first messages, and the steps whose messages are
/// built page by page after the commit.
#[derive(serde::Deserialize)]
struct Dispatched {
    messages: Vec<StepMessage>,
    deferred: Vec<Uuid>,
}

impl From<Dispatched> for Effects {
    fn from(d: Dispatched) -> Self {
        Effects {
            dispatch: d.messages,
            deferred: d.deferred,
            ..Effects::default()
        }
    }
}

/// A repair of a task in error, by hand ([`Store::repair`]).
#[derive(Debug, Clone, Default)]
pub struct Repair {
    /// The step to repair; `None`: the step that failed the task.
    pub step: Option<Uuid>,
    /// Complete the step with this result instead of running it again.
    pub resolution: Option<Value>,
    /// Who asked, and why: recorded in the task's history.
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// What [`Store::repair`] did.
#[derive(Debug)]
pub enum Repaired {
    /// Committed: the steps to publish and the tasks that finished.
    Done(Effects),
    /// Refused with a stable code (`task_not_found`, `task_not_failed`, `step_not_found`,
    /// `step_not_failed`, `invalid_result`); nothing changed.
    Refused { code: String, message: String },
}

/// The JSON answer of `tasker_apply_results`.
#[derive(serde::Deserialize)]
struct AppliedRow {
    accepted: usize,
    ignored: Vec<Uuid>,
    rejected: Vec<RejectedRow>,
    dispatch: Dispatched,
    finished: Vec<FinishedRow>,
    retries: Vec<RetryRow>,
}

#[derive(serde::Deserialize)]
struct RejectedRow {
    /// 1-based position in the batch.
    i: usize,
    code: String,
    detail: String,
}

#[derive(serde::Deserialize)]
struct FinishedRow {
    task_id: Uuid,
    state: TaskState,
}

#[derive(serde::Deserialize)]
struct RetryRow {
    step_id: Uuid,
    delay_ms: u64,
}

#[derive(FromRow)]
struct OverdueRow {
    id: Uuid,
    task_id: Uuid,
    attempt: i32,
    dispatched_at: DateTime<Utc>,
    queue_timeout_ms: i64,
}

/// Above what a step message carries its context and parent results by reference.
#[derive(Debug, Clone, Copy)]
pub struct Inline {
    /// A context (or a set of parent results) larger than this, in bytes of JSON.
    pub max_bytes: usize,
    /// More parents than this.
    pub max_parents: usize,
}

impl Default for Inline {
    fn default() -> Self {
        let d = tasker_shared::config::OrchestratorConfig::default();
        Inline {
            max_bytes: d.inline_max_bytes,
            max_parents: d.inline_max_parents,
        }
    }
}

impl Store {
    /// Connects, applies pending migrations, then (re)creates the engine's functions.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store> {
        Self::connect_with(url, max_connections, Inline::default()).await
    }

    /// [`Store::connect`] with the thresholds above which step messages carry references.
    pub async fn connect_with(url: &str, max_connections: u32, inline: Inline) -> Result<Store> {
        let instance = Uuid::now_v7();
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    // Generic plans: the engine's statements are keyed by ids, so a plan made
                    // once per session serves every call (custom plans re-plan each one).
                    sqlx::query(
                        "SELECT set_config('tasker.orchestrator', $1, false), \
                                set_config('plan_cache_mode', 'force_generic_plan', false), \
                                set_config('tasker.inline_max_bytes', $2, false), \
                                set_config('tasker.inline_max_parents', $3, false)",
                    )
                    .bind(instance.to_string())
                    .bind(inline.max_bytes.to_string())
                    .bind(inline.max_parents.to_string())
                    .execute(conn)
                    .await?;
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        migrator().run(&pool).await?;
        functions::apply(&pool).await?;
        let store = Store { pool, instance };
        store.heartbeat().await?;
        Ok(store)
    }

    /// This orchestrator's id.
    pub fn instance(&self) -> Uuid {
        self.instance
    }

    /// Says this orchestrator is alive (the sweeper calls it every round).
    pub async fn heartbeat(&self) -> Result<()> {
        sqlx::query(
            "INSERT INTO orchestrators (id) VALUES ($1)
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp()",
        )
        .bind(self.instance)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

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
        let t = &new.template.template;
        let plan = Plan::new(new.template);
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
        let (parents, children): (Vec<Uuid>, Vec<Uuid>) =
            plan.edges.iter().map(|&(p, c)| (ids[p], ids[c])).unzip();
        let answer: Value = sqlx::query_scalar(
            "SELECT tasker_create_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                       $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)",
        )
        .bind(Uuid::now_v7())
        .bind(new.template_id)
        .bind(&t.namespace)
        .bind(&t.name)
        .bind(&t.version)
        .bind(&new.context)
        .bind(&new.idempotency_key)
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
        .bind(&cols.queue_timeout_ms)
        .bind(&cols.parents)
        .bind(&cols.batch_spec)
        .bind(&cols.on_failure)
        .bind(&parents)
        .bind(&children)
        .fetch_one(&self.pool)
        .await?;
        let row: CreatedRow = decode("tasker_create_task", answer)?;
        Ok(Created {
            task_id: row.task_id,
            created: row.created,
            template_id: row.template_id,
            context: row.context,
            effects: Effects {
                dispatch: row.dispatch,
                created: row.created.then(|| t.namespace.clone()),
                ..Effects::default()
            },
        })
    }

    /// Applies a batch of results the orchestrator itself decided (a step it failed), which
    /// may move a step of any namespace, in one statement (`tasker_apply_results`, one round
    /// trip and one commit), retrying it as a whole on a deadlock.
    pub async fn apply_results<R: Serialize + Sync>(&self, results: &[R]) -> Result<Effects> {
        let mut conn = self.pool.acquire().await?;
        apply_results_on(&mut conn, results, None).await
    }

    /// A connection of this store's pool kept for a caller that runs one statement after
    /// another ([`Held`]).
    pub fn held(&self) -> Held {
        Held {
            pool: self.pool.clone(),
            conn: None,
        }
    }

    /// Moves steps whose backoff elapsed from `waiting_retry` to `enqueued` (next attempt).
    pub async fn dispatch_retries(&self, step_ids: &[Uuid]) -> Result<Effects> {
        let v: Value = sqlx::query_scalar("SELECT tasker_dispatch($1)")
            .bind(step_ids)
            .fetch_one(&self.pool)
            .await?;
        Ok(decode::<Dispatched>("tasker_dispatch", v)?.into())
    }

    /// The messages of enqueued steps (those dispatched with their messages deferred).
    pub async fn step_messages(&self, step_ids: &[Uuid]) -> Result<Vec<StepMessage>> {
        let text: String = sqlx::query_scalar("SELECT tasker_step_messages($1)::text")
            .bind(step_ids)
            .fetch_one(&self.pool)
            .await?;
        serde_json::from_str(&text)
            .map_err(|e| Error::Corrupt(format!("tasker_step_messages answered: {e}")))
    }

    /// Hands enqueued steps this orchestrator could not publish to the sweeper, as if their
    /// dispatcher had died.
    pub async fn release_steps(&self, step_ids: &[Uuid]) -> Result<()> {
        sqlx::query(
            "UPDATE steps SET dispatched_by = NULL
             WHERE id = ANY($1) AND state = 'enqueued' AND dispatched_by = tasker_orchestrator()",
        )
        .bind(step_ids)
        .execute(&self.pool)
        .await?;
        Ok(())
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
                    .ok_or_else(|| Error::Corrupt(format!("unknown task state {s:?}")))
            })
            .transpose()
    }

    /// Repairs a task that ended in error ([`Repair`]): its failed step runs again, or is
    /// completed with a supplied result, and the steps the failure cancelled wait for their
    /// parents again. Returns what the repair leaves to do, or why it was refused (having
    /// changed nothing).
    pub async fn repair(&self, task_id: Uuid, repair: &Repair) -> Result<Repaired> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Row {
            Refused {
                refused: String,
                message: String,
            },
            Done {
                dispatch: Dispatched,
                finished: Vec<FinishedRow>,
            },
        }
        let v: Value = retry_deadlocks(&mut *self.pool.acquire().await?, |conn| {
            let repair = repair.clone();
            Box::pin(async move {
                Ok(
                    sqlx::query_scalar("SELECT tasker_repair($1, $2, $3, $4, $5)")
                        .bind(task_id)
                        .bind(repair.step)
                        .bind(repair.resolution)
                        .bind(repair.by)
                        .bind(repair.reason)
                        .fetch_one(conn)
                        .await?,
                )
            })
        })
        .await?;
        Ok(match decode::<Row>("tasker_repair", v)? {
            Row::Refused { refused, message } => Repaired::Refused {
                code: refused,
                message,
            },
            Row::Done { dispatch, finished } => Repaired::Done(Effects {
                finished: finished.into_iter().map(|f| (f.task_id, f.state)).collect(),
                ..dispatch.into()
            }),
        })
    }

    /// Steps with a queue timeout that are still in flight past it, plus their run timeout and
    /// `grace` (by then they have either run to their own timeout or never started), as
    /// synthetic `queue_timeout` results to apply like any other result. A step without a
    /// queue timeout is never failed here: the worker bounds the handler's run from its start,
    /// and the broker redelivers the steps of a worker that vanished.
    pub async fn overdue(&self, grace: Duration, limit: i64) -> Result<Vec<StepResult>> {
        let rows: Vec<OverdueRow> = sqlx::query_as(
            "SELECT id, task_id, attempt, dispatched_at, queue_timeout_ms FROM steps
             WHERE state = 'enqueued' AND queue_timeout_ms IS NOT NULL
               -- LEAST: a stored timeout beyond what templates allow (60 days in all) must not
               -- overflow the timestamp arithmetic and fail the sweep for everyone.
               AND dispatched_at < clock_timestamp() - make_interval(
                       secs => LEAST(queue_timeout_ms + timeout_ms + $1, 5184000000)::float8 / 1000)
             ORDER BY dispatched_at LIMIT $2",
        )
        .bind(grace.as_millis() as i64)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|row| StepResult {
                started_at: row.dispatched_at,
                ..StepResult::permanent_failure(
                    row.task_id,
                    row.id,
                    row.attempt as u32,
                    "queue_timeout",
                    format!(
                        "no worker started the step within its queue timeout ({} ms)",
                        row.queue_timeout_ms
                    ),
                    "sweeper",
                )
            })
            .collect())
    }

    /// Hands steps whose messages this orchestrator dropped (a full backlog) to the sweeper:
    /// as if their dispatcher had died.
    pub async fn release(&self, steps: &[(Uuid, u32)]) -> Result<()> {
        let (ids, attempts): (Vec<Uuid>, Vec<i32>) =
            steps.iter().map(|&(id, a)| (id, a as i32)).unzip();
        sqlx::query(
            "UPDATE steps s SET dispatched_by = NULL
             FROM unnest($1::uuid[], $2::int[]) AS p(id, attempt)
             WHERE s.id = p.id AND s.attempt = p.attempt AND s.state = 'enqueued'",
        )
        .bind(&ids)
        .bind(&attempts)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Steps enqueued longer than `visibility` by an orchestrator that has not heartbeat for as
    /// long (it died between commit and publish, or dropped them): publish them once more. A
    /// live orchestrator publishes what it dispatched, so a healthy step that runs longer than
    /// `visibility` is never sent twice.
    pub async fn republish(&self, visibility: Duration, limit: i64) -> Result<Effects> {
        let mut tx = self.pool.begin().await?;
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "UPDATE steps SET publish_count = publish_count + 1,
                              dispatched_by = tasker_orchestrator()
             WHERE id IN (SELECT s.id FROM steps s
                          WHERE s.state = 'enqueued' AND s.publish_count = 1
                            AND s.dispatched_at < clock_timestamp() - make_interval(secs => $1)
                            AND NOT EXISTS (
                                SELECT 1 FROM orchestrators o
                                WHERE o.id = s.dispatched_by
                                  AND o.heartbeat_at > clock_timestamp() - make_interval(secs => $1))
                          ORDER BY s.dispatched_at LIMIT $2
                          FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .bind(visibility.as_secs_f64())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let messages: Value = sqlx::query_scalar("SELECT tasker_step_messages($1)")
            .bind(&ids)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        let dispatch: Vec<StepMessage> = decode("tasker_step_messages", messages)?;
        Ok(Effects {
            republished: dispatch.len(),
            dispatch,
            ..Effects::default()
        })
    }

    /// Steps whose backoff has elapsed (the orchestrator that scheduled them may have died).
    pub async fn due_retries(&self, limit: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM steps WHERE state = 'waiting_retry' AND next_attempt_at <= clock_timestamp()
             ORDER BY next_attempt_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}

/// The schema migrations in `migrations/`; released ones are never edited
/// (`migrations.lock`, checked by a test).
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// A connection kept out of the pool for one caller that runs its statements one after
/// another (the result processor, batch after batch): sqlx checks a pooled connection with a
/// round trip to PostgreSQL when it is taken and again when it is given back, which at one
/// result a batch were two of the three round trips a batch made. After a failure to reach
/// the database the connection goes back to the pool (which checks it) and the next statement
/// takes another.
#[derive(Debug)]
pub struct Held {
    pool: PgPool,
    conn: Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
}

impl Held {
    /// Applies results received from workers on the held connection; `permits[i]` says which
    /// namespaces the sender of `results[i]` may serve (`None`: any), and a result outside them
    /// is rejected ([`ResultCounts::rejected`]).
    pub async fn apply_results<R: Serialize + Sync>(
        &mut self,
        results: &[R],
        permits: &[Option<std::sync::Arc<str>>],
    ) -> Result<Effects> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(self.pool.acquire().await?),
        };
        let applied = apply_results_on(conn, results, Some(permits)).await;
        if let Err(Error::Unavailable(_)) = &applied {
            self.conn = None;
        }
        applied
    }
}

/// `tasker_apply_results` on `conn`, retried as a whole on a deadlock.
async fn apply_results_on<R: Serialize + Sync>(
    conn: &mut sqlx::PgConnection,
    results: &[R],
    permits: Option<&[Option<std::sync::Arc<str>>]>,
) -> Result<Effects> {
    // Every result's permit, or none at all when no result is limited (the common case: one
    // parameter less to send and check).
    let permits: Option<std::sync::Arc<Vec<Option<String>>>> = permits
        .filter(|p| p.iter().any(Option::is_some))
        .map(|p| std::sync::Arc::new(p.iter().map(|x| x.as_deref().map(str::to_owned)).collect()));
    // As text, decoded straight into the answer's types: a large fan-out's answer never
    // becomes a generic JSON tree in memory.
    // Encoded once; a retry shares it instead of copying it.
    let batch: std::sync::Arc<str> = serde_json::to_string(results)
        .map_err(|e| Error::Corrupt(format!("a result batch does not encode: {e}")))?
        .into();
    let text: String = retry_deadlocks(conn, |conn| {
        let (batch, permits) = (batch.clone(), permits.clone());
        Box::pin(async move {
            Ok(
                sqlx::query_scalar("SELECT tasker_apply_results($1::jsonb, $2)::text")
                    .bind(&*batch)
                    .bind(permits.as_deref())
                    .fetch_one(conn)
                    .await?,
            )
        })
    })
    .await?;
    let row: AppliedRow = serde_json::from_str(&text)
        .map_err(|e| Error::Corrupt(format!("tasker_apply_results answered: {e}")))?;
    Ok(Effects {
        dispatch: row.dispatch.messages,
        deferred: row.dispatch.deferred,
        retries: row
            .retries
            .into_iter()
            .map(|r| (r.step_id, Duration::from_millis(r.delay_ms)))
            .collect(),
        finished: row
            .finished
            .into_iter()
            .map(|f| (f.task_id, f.state))
            .collect(),
        results: Some(ResultCounts {
            accepted: row.accepted,
            ignored: row.ignored,
            rejected: row
                .rejected
                .into_iter()
                .map(|r| Rejected {
                    index: r.i.saturating_sub(1),
                    code: r.code,
                    detail: r.detail,
                })
                .collect(),
        }),
        ..Effects::default()
    })
}

/// Runs a statement that is its own transaction, again (up to five times) when PostgreSQL chose
/// it as a deadlock victim or failed it for serialization: the whole statement is retried.
async fn retry_deadlocks<T, F>(conn: &mut sqlx::PgConnection, mut statement: F) -> Result<T>
where
    F: for<'c> FnMut(&'c mut sqlx::PgConnection) -> futures_util::future::BoxFuture<'c, Result<T>>,
{
    let mut attempt = 0;
    loop {
        match statement(&mut *conn).await {
            Err(e) if e.is_retryable() && attempt < 5 => {
                attempt += 1;
                tracing::debug!(error = %e, attempt, "retrying after a deadlock");
            }
            other => return other,
        }
    }
}

/// Decodes the JSON answer of an engine function.
fn decode<T: serde::de::DeserializeOwned>(function: &str, v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::Corrupt(format!("{function} answered: {e}")))
}

/// Column vectors for the bulk `unnest` insert of a task's steps.
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
        // Bounded by template validation (30 days); saturating all the same.
        let ms = |seconds: u64| seconds.saturating_mul(1000).min(i64::MAX as u64) as i64;
        self.timeout_ms.push(ms(s.timeout_seconds));
        self.queue_timeout_ms.push(s.queue_timeout_seconds.map(ms));
        self.parents.push(parents);
        self.batch_spec.push(batch_spec);
        self.on_failure.push(s.on_failure.as_str().to_owned());
    }
}

#[cfg(test)]
mod migrations_lock {
    use std::collections::BTreeMap;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `migrations.lock`: file name → checksum of every released migration.
    fn released() -> BTreeMap<String, String> {
        include_str!("../migrations.lock")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (file, sum) = l.split_once(' ').expect("`<file> <sha384>` per line");
                (file.to_owned(), sum.trim().to_owned())
            })
            .collect()
    }

    /// The migrations as built into the binary: file name → checksum.
    fn current() -> BTreeMap<String, String> {
        super::migrator()
            .iter()
            .map(|m| {
                (
                    format!("{:04}_{}.sql", m.version, m.description.replace(' ', "_")),
                    hex(&m.checksum),
                )
            })
            .collect()
    }

    #[test]
    fn released_migrations_are_never_edited_or_removed() {
        let current = current();
        for (file, sum) in released() {
            match current.get(&file) {
                None => panic!("released migration {file} was removed or renamed"),
                Some(now) => assert_eq!(
                    now, &sum,
                    "released migration {file} was edited; put the change in a new migration"
                ),
            }
        }
    }

    #[test]
    fn every_migration_is_recorded_in_the_lock() {
        let released = released();
        for (file, sum) in current() {
            assert!(
                released.contains_key(&file),
                "{file} is not in tasker-orchestration/migrations.lock; append `{file} {sum}`"
            );
        }
    }
}
