//! Start controls as the store keeps them (`tasker_start_controls`): a task's dedupe window and
//! debounce in its row of a creation batch, how a control answered a request, and the retention
//! of windows whose time has passed.

use chrono::{DateTime, Utc};
use tasker_shared::start_controls::{Debounce, DebounceMode, Dedupe};

use super::{Result, Store};

/// What limits the tasks a key starts: nothing by default. A dedupe window's key is the task's
/// idempotency key.
#[derive(Debug, Clone, Default)]
pub struct Controls {
    pub dedupe: Option<Dedupe>,
    /// The debounce and its key (scoped to the template by the store).
    pub debounce: Option<(String, Debounce)>,
}

/// A debounce in a task's row of a creation batch.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct DebounceRow {
    key: String,
    period_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_ms: Option<i64>,
    mode: DebounceMode,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Controls {
    /// The row's `ttl_ms` (a dedupe window) and `debounce`.
    pub(super) fn rows(self) -> (Option<i64>, Option<DebounceRow>) {
        let ttl = self.dedupe.map(|d| ms(d.ttl));
        let debounce = self.debounce.map(|(key, d)| DebounceRow {
            key,
            period_ms: ms(d.period),
            max_ms: d.max.map(ms),
            mode: d.mode,
        });
        (ttl, debounce)
    }
}

/// How a start control answered a request that created nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controlled {
    /// Its dedupe window's task, purged by now: the window lasts until then.
    Deduplicated { until: Option<DateTime<Utc>> },
    /// A request of a burst whose task is another's.
    Debounced,
}

impl Store {
    /// Removes up to `limit` dedupe windows past their time (their tasks, if still kept, let go
    /// of the key) and bursts that ended over a day ago. Returns how many rows went.
    pub async fn purge_start_controls(&self, limit: i64) -> Result<u64> {
        let keys: i64 = sqlx::query_scalar(
            "WITH gone AS (
                 DELETE FROM task_keys WHERE key IN (
                     SELECT key FROM task_keys WHERE expires_at <= tasker_now()
                     ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
                 RETURNING key, task_id
             ), freed AS (
                 UPDATE tasks SET idempotency_key = NULL
                 FROM gone WHERE tasks.id = gone.task_id AND tasks.idempotency_key = gone.key
             )
             SELECT count(*) FROM gone",
        )
        .bind(limit)
        .fetch_one(&self.pool)
        .await?;
        // A burst has ended once its period or its max has passed since: a day later nothing
        // reads it (the scheduled task of a trailing one has long started).
        let bursts = sqlx::query(
            "DELETE FROM debounces WHERE key IN (
                 SELECT key FROM debounces
                 WHERE LEAST(last_at + period_ms * interval '1 millisecond', until)
                       < tasker_now() - interval '1 day'
                 ORDER BY last_at LIMIT $1 FOR UPDATE SKIP LOCKED)",
        )
        .bind(limit)
        .execute(&self.pool)
        .await?;
        Ok(keys.unsigned_abs() + bursts.rows_affected())
    }
}
