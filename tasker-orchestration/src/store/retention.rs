//! Retention in the store: purging finished tasks a batch at a time (`tasker_purge_tasks`)
//! under one cluster-wide lock per pass ([`PurgeSession`]), counting what a purge would take
//! (`tasker_purgeable`), and the tombstones purged ids leave.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use uuid::Uuid;

use tasker_shared::TaskState;

use super::{Result, Store, decode};

/// Each finished state with its completion-time cut-off: tasks of that state completed before
/// it may go.
pub type Cutoffs = [(TaskState, DateTime<Utc>)];

/// What one purge batch removed.
#[derive(Debug, Default, Clone, PartialEq, serde::Deserialize)]
pub struct PurgeBatch {
    /// Another orchestrator's purge was under way: this one did nothing.
    #[serde(default)]
    pub busy: bool,
    #[serde(default)]
    pub tasks: u64,
    #[serde(default)]
    pub by_state: BTreeMap<String, u64>,
    /// Rows deleted per table (`tasks`, `steps`, `edges`, `transitions`, `signals`,
    /// `dead_letters`).
    #[serde(default)]
    pub rows: BTreeMap<String, u64>,
    /// Bytes of row data deleted.
    #[serde(default)]
    pub bytes: u64,
}

/// A purged task's tombstone.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Tombstone {
    pub state: String,
    pub purged_at: DateTime<Utc>,
}

fn columns(cutoffs: &Cutoffs) -> (Vec<&'static str>, Vec<DateTime<Utc>>) {
    cutoffs.iter().map(|(s, at)| (s.as_str(), *at)).unzip()
}

/// The right to purge, cluster-wide, for a whole pass: a connection holding the purge's
/// session advisory lock (the key `tasker_purge_tasks` takes per transaction, which the
/// holder's own transactions then always get). Dropped without [`PurgeSession::end`] (an error
/// midway), its connection is closed rather than pooled, which releases the lock.
#[derive(Debug)]
pub struct PurgeSession {
    conn: Option<PoolConnection<Postgres>>,
}

const LOCK: &str = "hashtext('tasker_purge_tasks')";

impl PurgeSession {
    /// Purges up to `limit` finished tasks in one transaction.
    pub async fn batch(&mut self, cutoffs: &Cutoffs, limit: u32) -> Result<PurgeBatch> {
        let conn = self
            .conn
            .as_mut()
            .expect("a session has its connection until it ends");
        let (states, before) = columns(cutoffs);
        let answer: Value = sqlx::query_scalar("SELECT tasker_purge_tasks($1, $2, $3, false)")
            .bind(&states)
            .bind(&before)
            .bind(limit as i32)
            .fetch_one(&mut **conn)
            .await?;
        decode("tasker_purge_tasks", answer)
    }

    /// Deletes up to `limit` audit rows older than `keep` (oldest first), in one transaction
    /// that declares its cut-off to the audit log's trigger, which refuses any other delete;
    /// returns how many. The cut-off is reckoned by the database's clock.
    pub async fn audit(&mut self, keep: std::time::Duration, limit: u32) -> Result<u64> {
        let conn = self
            .conn
            .as_mut()
            .expect("a session has its connection until it ends");
        let mut tx = sqlx::Connection::begin(&mut **conn).await?;
        sqlx::query(
            "SELECT set_config('tasker.audit_purge_before',
                               (tasker_now() - make_interval(secs => $1))::text, true)",
        )
        .bind(keep.as_secs_f64())
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query(
            "DELETE FROM audit_log WHERE id IN
               (SELECT id FROM audit_log
                WHERE at < current_setting('tasker.audit_purge_before')::timestamptz
                ORDER BY at LIMIT $1)",
        )
        .bind(i64::from(limit))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }

    /// Deletes up to `limit` events received longer ago than `keep`, oldest first; returns how
    /// many. Their tasks stay (each follows its own retention).
    pub async fn events(&mut self, keep: std::time::Duration, limit: u32) -> Result<u64> {
        let conn = self
            .conn
            .as_mut()
            .expect("a session has its connection until it ends");
        let done = sqlx::query(
            "DELETE FROM events WHERE id IN
               (SELECT id FROM events WHERE received_at < tasker_now() - make_interval(secs => $1)
                ORDER BY id LIMIT $2)",
        )
        .bind(keep.as_secs_f64())
        .bind(i64::from(limit))
        .execute(&mut **conn)
        .await?;
        Ok(done.rows_affected())
    }

    /// Deletes up to `limit` rows of operations by filter that ended longer ago than `keep`
    /// (the tasks each matched, then the operations left with none); returns how many.
    pub async fn operations(&mut self, keep: std::time::Duration, limit: u32) -> Result<u64> {
        let conn = self
            .conn
            .as_mut()
            .expect("a session has its connection until it ends");
        let done = sqlx::query_scalar::<_, i64>(
            "WITH old AS (
                 SELECT id FROM operations
                 WHERE finished_at < now() - make_interval(secs => $1)
             ), matched AS (
                 DELETE FROM operation_tasks WHERE (operation_id, task_id) IN
                   (SELECT operation_id, task_id FROM operation_tasks
                    WHERE operation_id IN (SELECT id FROM old) LIMIT $2)
                 RETURNING operation_id
             ), ops AS (
                 DELETE FROM operations o USING old
                 WHERE o.id = old.id
                   AND NOT EXISTS (SELECT 1 FROM operation_tasks t WHERE t.operation_id = o.id)
                 RETURNING o.id
             )
             SELECT (SELECT count(*) FROM matched) + (SELECT count(*) FROM ops)",
        )
        .bind(keep.as_secs_f64())
        .bind(i64::from(limit))
        .fetch_one(&mut **conn)
        .await?;
        Ok(u64::try_from(done).unwrap_or(0))
    }

    /// Releases the lock and returns the connection to the pool.
    pub async fn end(mut self) {
        if let Some(mut conn) = self.conn.take() {
            let unlocked = sqlx::query(&format!("SELECT pg_advisory_unlock({LOCK})"))
                .execute(&mut *conn)
                .await;
            if unlocked.is_err() {
                drop(conn.detach());
            }
        }
    }
}

impl Drop for PurgeSession {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(conn.detach());
        }
    }
}

impl Store {
    /// Takes the purge's cluster-wide lock for a pass: with `wait`, after another pass ends;
    /// without, `None` at once while one is under way.
    pub async fn purge_session(&self, wait: bool) -> Result<Option<PurgeSession>> {
        let mut conn = self.pool.acquire().await?;
        let got: bool = if wait {
            sqlx::query(&format!("SELECT pg_advisory_lock({LOCK})"))
                .execute(&mut *conn)
                .await?;
            true
        } else {
            sqlx::query_scalar(&format!("SELECT pg_try_advisory_lock({LOCK})"))
                .fetch_one(&mut *conn)
                .await?
        };
        Ok(got.then_some(PurgeSession { conn: Some(conn) }))
    }

    /// How many tasks of each state a purge would take now, counting at most `limit`.
    pub async fn purgeable(&self, cutoffs: &Cutoffs, limit: u32) -> Result<BTreeMap<String, u64>> {
        let (states, before) = columns(cutoffs);
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT state, count(*) FROM tasker_purgeable($1, $2, $3) GROUP BY state",
        )
        .bind(&states)
        .bind(&before)
        .bind(limit as i32)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(s, n)| (s, n as u64)).collect())
    }

    /// The tombstone task `id` left, if it was purged (and its tombstone has not expired).
    pub async fn tombstone(&self, id: Uuid) -> Result<Option<Tombstone>> {
        Ok(
            sqlx::query_as("SELECT state, purged_at FROM purged_tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// When the newest tombstone was written: the last time a task was purged, if any is
    /// remembered.
    pub async fn last_purged_at(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(
            sqlx::query_scalar("SELECT max(purged_at) FROM purged_tasks")
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Forgets up to `limit` tombstones older than `before`; returns how many.
    pub async fn expire_tombstones(&self, before: DateTime<Utc>, limit: u32) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM purged_tasks WHERE id IN
               (SELECT id FROM purged_tasks WHERE purged_at < $1 ORDER BY purged_at LIMIT $2)",
        )
        .bind(before)
        .bind(limit as i64)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}
