//! Schedules: their definitions and state, and the transaction of one fire. A fire locks its
//! schedule's row (`FOR UPDATE SKIP LOCKED`: another orchestrator at the same fire moves on),
//! creates its task in the same transaction with the idempotency key
//! `schedule:<id>:<nominal time>`, and advances `next_fire_at` before the one commit, so any
//! number of orchestrators start exactly one task per schedule and nominal time.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::FromRow;
use uuid::Uuid;

use tasker_shared::api::Schedule;
use tasker_shared::time::{ScheduleSpec, format_duration};

use super::tasks::create_task_on;
use super::{Created, NewTask, Result, Store};

const COLUMNS: &str = "id, namespace, name, template, version, cron, timezone, context, overlap,
    catch_up_ms, paused, note, next_fire_at, buffered_at, last_fire_at, last_task_id, fires,
    skipped, created_at, updated_at, updated_by, token_id";

/// A schedule's row.
#[derive(Debug, Clone, FromRow)]
pub struct ScheduleRow {
    pub id: Uuid,
    pub namespace: String,
    pub name: String,
    pub template: String,
    pub version: Option<String>,
    pub cron: String,
    pub timezone: String,
    pub context: Value,
    pub overlap: String,
    pub catch_up_ms: i64,
    pub paused: bool,
    pub note: Option<String>,
    pub next_fire_at: Option<DateTime<Utc>>,
    pub buffered_at: Option<DateTime<Utc>>,
    pub last_fire_at: Option<DateTime<Utc>>,
    pub last_task_id: Option<Uuid>,
    pub fires: i64,
    pub skipped: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub updated_by: Option<String>,
    /// The API token that saved (or last resumed) it: each fire is judged with it.
    pub token_id: Option<i64>,
}

impl From<ScheduleRow> for Schedule {
    fn from(r: ScheduleRow) -> Self {
        Schedule {
            namespace: r.namespace,
            name: r.name,
            template: r.template,
            version: r.version,
            cron: r.cron,
            timezone: r.timezone,
            context: r.context,
            overlap: r.overlap,
            catch_up: format_duration(std::time::Duration::from_millis(r.catch_up_ms as u64)),
            paused: r.paused,
            note: r.note,
            next_fire_at: r.next_fire_at,
            buffered_at: r.buffered_at,
            last_fire_at: r.last_fire_at,
            last_task_id: r.last_task_id,
            fires: r.fires,
            skipped: r.skipped,
            created_at: r.created_at,
            updated_at: r.updated_at,
            updated_by: r.updated_by,
            upcoming: Vec::new(),
        }
    }
}

impl ScheduleRow {
    /// The definition, as `POST /v1/schedules` takes it.
    pub fn spec(&self) -> ScheduleSpec {
        ScheduleSpec {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            template: self.template.clone(),
            version: self.version.clone(),
            cron: self.cron.clone(),
            timezone: self.timezone.clone(),
            context: Some(self.context.clone()),
            overlap: tasker_shared::time::Overlap::parse(&self.overlap).unwrap_or_default(),
            catch_up: Some(format_duration(std::time::Duration::from_millis(
                self.catch_up_ms as u64,
            ))),
        }
    }
}

/// What one pass over a due schedule decided, written back with its fire.
#[derive(Debug, Default)]
pub struct Fire {
    pub next_fire_at: Option<DateTime<Utc>>,
    pub buffered_at: Option<DateTime<Utc>>,
    /// Fires skipped by this pass.
    pub skipped: i64,
    /// The task it started and the nominal time it fired, if it fired.
    pub fired: Option<(Uuid, DateTime<Utc>)>,
    /// Pause the schedule, with this note (its token may no longer start its tasks).
    pub pause: Option<String>,
}

/// The transaction of one fire of one schedule, its row locked.
#[derive(Debug)]
pub struct ScheduleTx {
    tx: sqlx::Transaction<'static, sqlx::Postgres>,
    pub row: ScheduleRow,
    /// The database's clock when the row was locked: every orchestrator judges by one clock.
    pub now: DateTime<Utc>,
    /// When the task of its last fire was created (`None`: no fire yet, or that task is gone).
    pub last_fired: Option<DateTime<Utc>>,
}

impl ScheduleTx {
    /// Claims one of the `max` backfills its schedule may start in an hour (under its row's
    /// lock, held by this transaction): false when they are all taken. The hour starts with
    /// its first backfill.
    pub async fn claim_backfill(&mut self, max: u32) -> Result<bool> {
        let claimed: Option<i32> = sqlx::query_scalar(
            "UPDATE schedules SET
                 backfills = CASE WHEN backfills_since > tasker_clock() - interval '1 hour'
                                  THEN backfills + 1 ELSE 1 END,
                 backfills_since = CASE WHEN backfills_since > tasker_clock() - interval '1 hour'
                                        THEN backfills_since ELSE tasker_clock() END
             WHERE id = $1
               AND (backfills_since IS NULL
                    OR backfills_since <= tasker_clock() - interval '1 hour'
                    OR backfills < $2)
             RETURNING backfills",
        )
        .bind(self.row.id)
        .bind(max as i32)
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(claimed.is_some())
    }

    /// Whether task `id` is still open (scheduled or running).
    pub async fn task_open(&mut self, id: Uuid) -> Result<bool> {
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *self.tx)
            .await?;
        Ok(matches!(state.as_deref(), Some("running" | "scheduled")))
    }

    /// Creates the task of a fire in this transaction.
    pub async fn create_task(&mut self, new: NewTask<'_>) -> Result<Created> {
        create_task_on(&mut self.tx, new).await
    }

    /// Cancels task `id` (`cancel_previous`); whether it was open.
    pub async fn cancel_task(&mut self, id: Uuid, why: &str) -> Result<bool> {
        Ok(
            sqlx::query_scalar("SELECT tasker_end_task($1, 'cancelled', NULL, $2)")
                .bind(id)
                .bind(why)
                .fetch_one(&mut *self.tx)
                .await?,
        )
    }

    /// Writes the pass back and commits.
    pub async fn finish(mut self, fire: &Fire) -> Result<()> {
        sqlx::query(
            "UPDATE schedules SET next_fire_at = $2, buffered_at = $3,
                    skipped = skipped + $4,
                    last_skipped_at = CASE WHEN $4 > 0 THEN tasker_clock()
                                           ELSE last_skipped_at END,
                    fires = fires + ($5::uuid IS NOT NULL)::int,
                    last_task_id = COALESCE($5, last_task_id),
                    last_fire_at = COALESCE($6, last_fire_at),
                    paused = paused OR $7::text IS NOT NULL, note = COALESCE($7, note),
                    updated_at = CASE WHEN $7::text IS NULL THEN updated_at
                                      ELSE tasker_clock() END
             WHERE id = $1",
        )
        .bind(self.row.id)
        .bind(fire.next_fire_at)
        .bind(fire.buffered_at)
        .bind(fire.skipped)
        .bind(fire.fired.map(|f| f.0))
        .bind(fire.fired.map(|f| f.1))
        .bind(&fire.pause)
        .execute(&mut *self.tx)
        .await?;
        self.tx.commit().await?;
        Ok(())
    }
}

impl Store {
    /// Creates the schedule `spec` names, or updates its definition (its pause, counters and
    /// last fire stay; its next fire moves only if its cron or time zone changed).
    /// `next_fire_at` is the first fire from now by the new definition. Returns it and whether
    /// it was created; `None` when it would be new and its namespace holds `max` schedules
    /// already (counted under a lock on the namespace's schedules, so concurrent creations
    /// never pass the bound together).
    pub async fn put_schedule(
        &self,
        spec: &ScheduleSpec,
        catch_up_ms: i64,
        next_fire_at: Option<DateTime<Utc>>,
        by: Option<&str>,
        token_id: Option<i64>,
        max: usize,
    ) -> Result<Option<(ScheduleRow, bool)>> {
        #[derive(FromRow)]
        struct Row {
            #[sqlx(flatten)]
            row: ScheduleRow,
            created: bool,
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("tasker.schedules:{}", spec.namespace))
            .execute(&mut *tx)
            .await?;
        let (held, exists): (i64, bool) = sqlx::query_as(
            "SELECT count(*), COALESCE(bool_or(name = $2), false)
             FROM schedules WHERE namespace = $1",
        )
        .bind(&spec.namespace)
        .bind(&spec.name)
        .fetch_one(&mut *tx)
        .await?;
        if !exists && held >= max as i64 {
            return Ok(None);
        }
        let r: Row = sqlx::query_as(&format!(
            "INSERT INTO schedules AS s (id, namespace, name, template, version, cron, timezone,
                                        context, overlap, catch_up_ms, next_fire_at, updated_by,
                                        token_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
             ON CONFLICT (namespace, name) DO UPDATE SET
                 template = EXCLUDED.template, version = EXCLUDED.version,
                 cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, context = EXCLUDED.context,
                 overlap = EXCLUDED.overlap, catch_up_ms = EXCLUDED.catch_up_ms,
                 next_fire_at = CASE WHEN (s.cron, s.timezone) = (EXCLUDED.cron, EXCLUDED.timezone)
                                     THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END,
                 updated_at = tasker_clock(), updated_by = EXCLUDED.updated_by,
                 token_id = EXCLUDED.token_id
             RETURNING {COLUMNS}, (xmax = 0) AS created"
        ))
        .bind(Uuid::now_v7())
        .bind(&spec.namespace)
        .bind(&spec.name)
        .bind(&spec.template)
        .bind(&spec.version)
        .bind(&spec.cron)
        .bind(&spec.timezone)
        .bind(
            spec.context
                .clone()
                .unwrap_or_else(|| serde_json::json!({})),
        )
        .bind(spec.overlap.as_str())
        .bind(catch_up_ms)
        .bind(next_fire_at)
        .bind(by)
        .bind(token_id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some((r.row, r.created)))
    }

    /// A page of schedules, by namespace and name, after `after` (the last of the previous
    /// page), at most `limit`; `namespaces` limits them to the namespaces matching that regular
    /// expression (a scoped token's).
    pub async fn schedules(
        &self,
        namespace: Option<&str>,
        namespaces: Option<&str>,
        after: Option<(&str, &str)>,
        limit: i64,
    ) -> Result<Vec<ScheduleRow>> {
        self.list(
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM schedules
             WHERE ($1::text IS NULL OR namespace = $1) AND ($2::text IS NULL OR namespace ~ $2)
               AND ($3::text IS NULL OR (namespace, name) > ($3, $4))
             ORDER BY namespace, name LIMIT $5"
            ))
            .bind(namespace)
            .bind(namespaces)
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1))
            .bind(limit),
        )
        .await
    }

    pub async fn schedule(&self, namespace: &str, name: &str) -> Result<Option<ScheduleRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE namespace = $1 AND name = $2"
        ))
        .bind(namespace)
        .bind(name)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Deletes a schedule; whether there was one. Its tasks stay.
    pub async fn delete_schedule(&self, namespace: &str, name: &str) -> Result<bool> {
        Ok(
            sqlx::query("DELETE FROM schedules WHERE namespace = $1 AND name = $2")
                .bind(namespace)
                .bind(name)
                .execute(&self.pool)
                .await?
                .rows_affected()
                > 0,
        )
    }

    /// Pauses (`paused`, with its note) or resumes a schedule; a resumed one fires next at
    /// `next_fire_at` (from now: the paused time is not caught up), judged from then on with
    /// the token that resumed it (`token_id`).
    pub async fn set_schedule_paused(
        &self,
        namespace: &str,
        name: &str,
        paused: bool,
        note: Option<&str>,
        next_fire_at: Option<DateTime<Utc>>,
        by: (Option<&str>, Option<i64>),
    ) -> Result<Option<ScheduleRow>> {
        Ok(sqlx::query_as(&format!(
            "UPDATE schedules SET paused = $3, note = $4,
                    next_fire_at = CASE WHEN $3 THEN next_fire_at ELSE $5 END,
                    buffered_at = CASE WHEN $3 THEN buffered_at END,
                    updated_at = tasker_clock(), updated_by = $6,
                    token_id = CASE WHEN $3 THEN token_id ELSE $7 END
             WHERE namespace = $1 AND name = $2
             RETURNING {COLUMNS}"
        ))
        .bind(namespace)
        .bind(name)
        .bind(paused)
        .bind(note)
        .bind(next_fire_at)
        .bind(by.0)
        .bind(by.1)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Schedules with a fire due now, or a buffered fire waiting (at most `limit`).
    pub async fn due_schedules(&self, limit: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            // tasker_now(), not tasker_clock(): a stable bound the index can range over.
            "(SELECT id FROM schedules WHERE NOT paused AND next_fire_at <= tasker_now()
              ORDER BY next_fire_at LIMIT $1)
             UNION
             (SELECT id FROM schedules WHERE buffered_at IS NOT NULL AND NOT paused LIMIT $1)",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Begins the transaction of a fire of schedule `id`, its row locked; `None` if it is gone,
    /// paused, or locked by another orchestrator's fire.
    pub async fn schedule_tx(&self, id: Uuid) -> Result<Option<ScheduleTx>> {
        self.lock_schedule(id, "AND NOT paused FOR UPDATE SKIP LOCKED")
            .await
    }

    /// Begins a transaction on schedule `id` whatever its state (a trigger, a backfill),
    /// waiting for a fire in progress; `None` if it is gone.
    pub async fn schedule_tx_any(&self, id: Uuid) -> Result<Option<ScheduleTx>> {
        self.lock_schedule(id, "FOR UPDATE").await
    }

    async fn lock_schedule(&self, id: Uuid, lock: &str) -> Result<Option<ScheduleTx>> {
        #[derive(FromRow)]
        struct Row {
            #[sqlx(flatten)]
            row: ScheduleRow,
            now: DateTime<Utc>,
            last_fired: Option<DateTime<Utc>>,
        }
        let mut tx = self.pool.begin().await?;
        let row: Option<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS}, tasker_clock() AS now,
                    (SELECT t.created_at FROM tasks t WHERE t.id = schedules.last_task_id)
                        AS last_fired
             FROM schedules WHERE id = $1 {lock}"
        ))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        Ok(row.map(|r| ScheduleTx {
            tx,
            row: r.row,
            now: r.now,
            last_fired: r.last_fired,
        }))
    }

    /// The database's clock.
    pub async fn now(&self) -> Result<DateTime<Utc>> {
        Ok(sqlx::query_scalar("SELECT tasker_clock()")
            .fetch_one(&self.pool)
            .await?)
    }
}
