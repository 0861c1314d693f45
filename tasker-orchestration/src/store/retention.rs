//! Retention in the store: purging finished tasks a batch at a time (`tasker_purge_tasks`),
//! counting what a purge would take (`tasker_purgeable`), and the tombstones purged ids leave.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
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

impl Store {
    /// Purges up to `limit` finished tasks in one transaction; with `wait` false, returns at
    /// once (`busy`) when another purge is under way.
    pub async fn purge_batch(
        &self,
        cutoffs: &Cutoffs,
        limit: u32,
        wait: bool,
    ) -> Result<PurgeBatch> {
        let (states, before) = columns(cutoffs);
        let answer: Value = sqlx::query_scalar("SELECT tasker_purge_tasks($1, $2, $3, $4)")
            .bind(&states)
            .bind(&before)
            .bind(limit as i32)
            .bind(wait)
            .fetch_one(&self.pool)
            .await?;
        decode("tasker_purge_tasks", answer)
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
