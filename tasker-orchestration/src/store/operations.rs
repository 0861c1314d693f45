//! Operations by filter (migration 0023): the tasks a filter matches are written down when the
//! operation starts, and `tasker_operate` acts on them a batch per transaction, recording each
//! one's outcome in it, so an operation taken over after its orchestrator died acts on each task
//! once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use sqlx::postgres::PgArguments;
use uuid::Uuid;

use tasker_shared::api::{Operation, OperationFilter};

use super::batch::{Batch, bind};
use super::repair::Answer;
use super::results::FinishedRow;
use super::{Repaired, Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// An operation to start ([`Store::start_operation`]).
#[derive(Debug, Clone)]
pub struct NewOperation {
    /// `retry`, `resolve` or `cancel`.
    pub action: String,
    /// The filter, its state filled in for retry and resolve.
    pub filter: OperationFilter,
    /// resolve: the failed steps' result.
    pub resolution: Option<serde_json::Value>,
    pub reason: Option<String>,
    pub actor: Option<String>,
    /// The token that starts it (judged again before every batch).
    pub token_id: Option<i64>,
    /// Only namespaces matching this regular expression (a scoped token's).
    pub covers: Option<String>,
}

/// What [`Store::start_operation`] did.
#[derive(Debug)]
pub enum Started {
    Created(Box<Operation>),
    /// The filter matched more than the most one operation may take: nothing was started.
    TooMany,
}

/// An operation this orchestrator took to run ([`Store::claim_operations`]).
#[derive(Debug, Clone, FromRow)]
pub struct Claimed {
    pub id: Uuid,
    /// The token that started it.
    pub token_id: Option<i64>,
    pub action: String,
}

/// The task states an action takes when the filter names none.
fn states(action: &str, state: Option<&str>) -> Vec<String> {
    match (action, state) {
        (_, Some(s)) => vec![s.to_owned()],
        ("cancel", None) => vec!["running".into(), "scheduled".into()],
        _ => vec!["error".into()],
    }
}

/// The `FROM … WHERE` of the tasks `f` matches, with its eleven arguments (`$1` to `$11`).
fn matching(action: &str, f: &OperationFilter, covers: Option<&str>) -> (String, PgArguments) {
    let mut args = PgArguments::default();
    bind(&mut args, states(action, f.state.as_deref()));
    bind(&mut args, f.namespace.as_deref());
    bind(&mut args, f.name.as_deref());
    bind(&mut args, f.version.as_deref());
    bind(&mut args, f.step.as_deref());
    bind(&mut args, f.error_kind.as_deref());
    bind(&mut args, f.created_after);
    bind(&mut args, f.created_before);
    bind(&mut args, f.ids.clone());
    bind(&mut args, covers.map(str::to_owned));
    bind(&mut args, f.context.clone());
    // Written in only when given, so the plan can use the GIN index of `tasks.context`.
    let context = if f.context.is_some() {
        "t.context @> $11"
    } else {
        "$11::jsonb IS NULL"
    };
    let sql = format!(
        "FROM tasks t
         WHERE t.state = ANY ($1::text[])
           AND ($2::text IS NULL OR t.namespace = $2)
           AND ($3::text IS NULL OR t.name = $3)
           AND ($4::text IS NULL OR t.version = $4)
           AND ($5::text IS NULL OR t.error->>'step' = $5
                OR (t.state <> 'error' AND EXISTS (
                    SELECT 1 FROM steps s WHERE s.task_id = t.id AND s.name = $5
                      AND s.state IN ('enqueued', 'waiting_retry', 'throttled'))))
           AND ($6::text IS NULL OR t.error->'error'->>'kind' = $6)
           AND ($7::timestamptz IS NULL OR t.created_at >= $7)
           AND ($8::timestamptz IS NULL OR t.created_at < $8)
           AND ($9::uuid[] IS NULL OR t.id = ANY ($9))
           AND ($10::text IS NULL OR t.namespace ~ $10)
           AND {context}"
    );
    (sql, args)
}

/// An `operations` row as the API shows it.
#[derive(FromRow)]
struct Row {
    id: Uuid,
    action: String,
    filter: sqlx::types::Json<OperationFilter>,
    reason: Option<String>,
    actor: Option<String>,
    state: String,
    matched: i64,
    acted: i64,
    skipped: i64,
    note: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

impl From<Row> for Operation {
    fn from(r: Row) -> Self {
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        Operation {
            id: r.id,
            action: r.action,
            filter: r.filter.0,
            reason: r.reason,
            by: r.actor,
            state: r.state,
            matched: n(r.matched),
            acted: n(r.acted),
            skipped: n(r.skipped),
            note: r.note,
            created_at: r.created_at,
            updated_at: r.updated_at,
            finished_at: r.finished_at,
        }
    }
}

const COLUMNS: &str = "id, action, filter, reason, actor, state, matched, acted, skipped, note,
    created_at, updated_at, finished_at";

impl Store {
    /// How many tasks `f` matches for `action`, and the newest ten of them.
    pub async fn count_operation(
        &self,
        action: &str,
        f: &OperationFilter,
        covers: Option<&str>,
    ) -> Result<(u64, Vec<Uuid>)> {
        let (from, args) = matching(action, f, covers);
        let count: i64 = sqlx::query_scalar_with(&format!("SELECT count(*) {from}"), args)
            .fetch_one(self.pool())
            .await?;
        let (from, args) = matching(action, f, covers);
        let sample = sqlx::query_scalar_with(
            &format!("SELECT t.id {from} ORDER BY t.id DESC LIMIT 10"),
            args,
        )
        .fetch_all(self.pool())
        .await?;
        Ok((u64::try_from(count).unwrap_or(0), sample))
    }

    /// Starts an operation: writes down every task it matches (at most `max_tasks`, else
    /// [`Started::TooMany`] and nothing is written) with the operation, in one transaction.
    pub async fn start_operation(&self, new: &NewOperation, max_tasks: u64) -> Result<Started> {
        let id = Uuid::now_v7();
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO operations (id, action, filter, resolution, reason, actor, token_id,
                                     matched)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0)",
        )
        .bind(id)
        .bind(&new.action)
        .bind(sqlx::types::Json(&new.filter))
        .bind(&new.resolution)
        .bind(&new.reason)
        .bind(&new.actor)
        .bind(new.token_id)
        .execute(&mut *tx)
        .await?;
        let covers = new.covers.as_deref();
        // The tasks (or dead letters) matched, written down: at most one more than the most.
        let (insert, mut args) = if OperationFilter::of_dead_letters(&new.action) {
            let (from, args) = super::letter_operations::matching(&new.filter, covers);
            let insert = format!(
                "INSERT INTO operation_dead_letters (operation_id, dead_letter_id)
                 SELECT $8, d.id {from} LIMIT $9"
            );
            (insert, args)
        } else {
            let (from, args) = matching(&new.action, &new.filter, covers);
            let insert = format!(
                "INSERT INTO operation_tasks (operation_id, task_id)
                 SELECT $12, t.id {from} LIMIT $13"
            );
            (insert, args)
        };
        bind(&mut args, id);
        bind(
            &mut args,
            i64::try_from(max_tasks)
                .unwrap_or(i64::MAX)
                .saturating_add(1),
        );
        let matched = sqlx::query_with(&insert, args)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if matched > max_tasks {
            tx.rollback().await?;
            return Ok(Started::TooMany);
        }
        let row: Row = sqlx::query_as(&format!(
            "UPDATE operations SET matched = $2,
                 state = CASE WHEN $2 = 0 THEN 'complete' ELSE 'running' END,
                 finished_at = CASE WHEN $2 = 0 THEN clock_timestamp() END
             WHERE id = $1 RETURNING {COLUMNS}"
        ))
        .bind(id)
        .bind(i64::try_from(matched).unwrap_or(i64::MAX))
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Started::Created(Box::new(row.into())))
    }

    /// One operation; only if token `token` started it, if given.
    pub async fn operation(&self, id: Uuid, token: Option<i64>) -> Result<Option<Operation>> {
        let row: Option<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM operations
             WHERE id = $1 AND ($2::bigint IS NULL OR token_id = $2)"
        ))
        .bind(id)
        .bind(token)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(Into::into))
    }

    /// Operations newest first, before `before`; only token `token`'s if given.
    pub async fn operations(
        &self,
        token: Option<i64>,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Operation>> {
        let rows: Vec<Row> = self
            .list(
                sqlx::query_as(&format!(
                    "SELECT {COLUMNS} FROM operations
                     WHERE ($1::bigint IS NULL OR token_id = $1)
                       AND ($2::uuid IS NULL OR id < $2)
                     ORDER BY id DESC LIMIT $3"
                ))
                .bind(token)
                .bind(before)
                .bind(limit),
            )
            .await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// Ends a running operation as `state` (`cancelled`, `failed`) with `note`; the tasks it
    /// has not reached are left as they are. Returns the operation as it stands, or `None` if
    /// there is none; an operation already ended is returned unchanged.
    pub async fn end_operation(
        &self,
        id: Uuid,
        state: &str,
        note: &str,
    ) -> Result<Option<Operation>> {
        sqlx::query(
            "UPDATE operations SET state = $2, note = $3, finished_at = clock_timestamp(),
                 updated_at = clock_timestamp()
             WHERE id = $1 AND state = 'running'",
        )
        .bind(id)
        .bind(state)
        .bind(note)
        .execute(self.pool())
        .await?;
        self.operation(id, None).await
    }

    /// Takes the running operations no live orchestrator holds (or this one does) for `lease`:
    /// those whose lease ran out, and those of an orchestrator whose heartbeat is older than
    /// `live` (killed: its operations go on within seconds, not when their lease runs out; a
    /// batch locks its operation's row, so two orchestrators never act on one at once).
    pub async fn claim_operations(&self, lease: Duration, live: Duration) -> Result<Vec<Claimed>> {
        Ok(sqlx::query_as(
            "UPDATE operations SET owner = $1,
                 lease_until = clock_timestamp() + $2 * interval '1 millisecond'
             WHERE id IN (SELECT p.id FROM operations p
                          WHERE p.state = 'running'
                            AND (p.lease_until IS NULL OR p.lease_until < clock_timestamp()
                                 OR p.owner = $1
                                 OR NOT EXISTS (
                                     SELECT 1 FROM orchestrators o
                                     WHERE o.id = p.owner
                                       AND o.heartbeat_at > clock_timestamp() - make_interval(secs => $3)))
                          ORDER BY p.id FOR UPDATE OF p SKIP LOCKED)
             RETURNING id, token_id, action",
        )
        .bind(self.instance)
        .bind(lease.as_millis() as f64)
        .bind(live.as_secs_f64())
        .fetch_all(self.pool())
        .await?)
    }

    /// Acts on the next `n` tasks of operation `id` (`tasker_operate`), the token now covering
    /// `covers` (`None`: every namespace), and extends this orchestrator's lease on it.
    pub async fn operate(
        &self,
        id: Uuid,
        n: usize,
        covers: Option<&str>,
        lease: Duration,
    ) -> Result<Batch> {
        #[derive(serde::Deserialize)]
        struct Answered {
            state: String,
            #[serde(default)]
            acted: u64,
            #[serde(default)]
            skipped: u64,
            #[serde(default)]
            answers: Vec<Answer>,
            #[serde(default)]
            finished: Vec<FinishedRow>,
        }
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        let instance = self.instance;
        let v: serde_json::Value = retry_deadlocks(&mut *self.pool.acquire().await?, |conn| {
            let covers = covers.map(str::to_owned);
            Box::pin(async move {
                let mut tx = sqlx::Connection::begin(conn).await?;
                let v = sqlx::query_scalar("SELECT tasker_operate($1, $2, $3)")
                    .bind(id)
                    .bind(n)
                    .bind(covers)
                    .fetch_one(&mut *tx)
                    .await?;
                sqlx::query(
                    "UPDATE operations SET owner = $2,
                         lease_until = clock_timestamp() + $3 * interval '1 millisecond'
                     WHERE id = $1 AND state = 'running'",
                )
                .bind(id)
                .bind(instance)
                .bind(lease.as_millis() as f64)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(v)
            })
        })
        .await?;
        let a = decode::<Answered>("tasker_operate", v)?;
        let mut effects = Effects::default();
        for answer in a.answers {
            if let Repaired::Done(done) = Repaired::from(answer) {
                effects.merge(*done);
            }
        }
        effects
            .finished
            .extend(a.finished.into_iter().map(|f| (f.task_id, f.state)));
        Ok(Batch {
            state: a.state,
            acted: a.acted,
            skipped: a.skipped,
            effects,
        })
    }
}
