//! Fair sharing in the store: throttled steps woken when a slot frees or their time comes
//! (`tasker_wake_throttled`), the slot reconciler (`tasker_reconcile_slots`), and the
//! concurrency and rate keys as the API shows them, with an operator's pause.

use chrono::{DateTime, Utc};
use serde_json::Value;

use tasker_shared::api::{ConcurrencyLimit, RateLimit};

use super::results::Dispatched;
use super::{Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// A concurrency key whose recorded slots differed from the steps holding them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Drift {
    pub key: String,
    /// Slots held by steps, now recorded.
    pub counted: i32,
    /// What was recorded before.
    pub recorded: Option<i32>,
}

const RATE_COLUMNS: &str = "r.key, r.lim AS limit, r.per_ms, r.burst, r.paused_until, \
    r.pause_note, r.paused_by, r.used_at,
    (SELECT count(*) FROM steps s
     WHERE s.state = 'throttled' AND s.next_attempt_at IS NOT NULL
       AND s.throttle->>'key' = r.key) AS throttled";

impl Store {
    /// Dispatches up to `limit` throttled steps whose slot freed or whose time came; returns
    /// what that leaves to do and how many were tried.
    pub async fn wake_throttled(&self, limit: i64) -> Result<(Effects, usize)> {
        #[derive(serde::Deserialize)]
        struct Woken {
            #[serde(flatten)]
            dispatched: Dispatched,
            woken: usize,
        }
        let mut conn = self.pool.acquire().await?;
        let answer: Value = retry_deadlocks(&mut conn, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar("SELECT tasker_wake_throttled($1)")
                    .bind(limit as i32)
                    .fetch_one(conn)
                    .await?)
            })
        })
        .await?;
        let w: Woken = decode("tasker_wake_throttled", answer)?;
        Ok((w.dispatched.into(), w.woken))
    }

    /// Recounts every concurrency key's slots from the steps holding them and corrects any
    /// difference; returns the keys that were wrong.
    pub async fn reconcile_slots(&self) -> Result<Vec<Drift>> {
        let answer: Value = sqlx::query_scalar("SELECT tasker_reconcile_slots()")
            .fetch_one(&self.pool)
            .await?;
        decode("tasker_reconcile_slots", answer)
    }

    /// Concurrency keys whose name starts with `prefix` (all by default): those in use or with
    /// steps waiting first, then the most recently used; a page of at most `limit` after
    /// `after` (the last row of the previous page: in use, used at, key).
    pub async fn concurrency_limits(
        &self,
        prefix: Option<&str>,
        after: Option<(bool, DateTime<Utc>, &str)>,
        limit: i64,
    ) -> Result<Vec<ConcurrencyLimit>> {
        self.list(
            sqlx::query_as(
                "SELECT c.key, c.lim AS limit, c.in_use, c.used_at,
                    (SELECT count(*) FROM steps s
                     WHERE s.state = 'throttled' AND s.throttled_on = c.key) AS throttled
             FROM concurrency_slots c
             WHERE ($1::text IS NULL OR starts_with(c.key, $1))
               AND ($2::boolean IS NULL OR (c.in_use > 0) < $2
                    OR ((c.in_use > 0) = $2
                        AND (c.used_at < $3 OR (c.used_at = $3 AND c.key > $4))))
             ORDER BY c.in_use > 0 DESC, c.used_at DESC, c.key LIMIT $5",
            )
            .bind(prefix)
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1))
            .bind(after.map(|a| a.2))
            .bind(limit),
        )
        .await
    }

    /// Rate keys, most recently used first: a page of at most `limit` after `after` (the last
    /// row of the previous page: used at, key). With `namespaces` (a regex of whole names),
    /// only the keys of those namespaces: read from their contexts or named by their templates.
    pub async fn rate_limits(
        &self,
        namespaces: Option<&str>,
        after: Option<(DateTime<Utc>, &str)>,
        limit: i64,
    ) -> Result<Vec<RateLimit>> {
        self.list(
            sqlx::query_as(&format!(
                "SELECT {RATE_COLUMNS} FROM rate_limits r
             WHERE ($1::text IS NULL
                    OR (strpos(r.key, '/') > 0 AND split_part(r.key, '/', 1) ~ $1)
                    OR EXISTS (SELECT FROM rate_key_users u
                               WHERE u.key = r.key AND u.namespace ~ $1))
               AND ($2::timestamptz IS NULL OR r.used_at < $2 OR (r.used_at = $2 AND r.key > $3))
             ORDER BY r.used_at DESC, r.key LIMIT $4"
            ))
            .bind(namespaces)
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1))
            .bind(limit),
        )
        .await
    }

    /// The namespace a rate key belongs to: a key read from a context, its template's (before
    /// the `/`); a named one, the namespace that declared it (`None`: none did, or it is
    /// older than declarations).
    pub async fn rate_key_owner(&self, key: &str) -> Result<Option<String>> {
        if let Some((namespace, _)) = key.split_once('/') {
            return Ok(Some(namespace.to_owned()));
        }
        Ok(
            sqlx::query_scalar("SELECT namespace FROM rate_keys WHERE key = $1")
                .bind(key)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Pauses rate key `key` until `until` (`by`: who asked); `None` if no step ever used it.
    pub async fn pause_rate_limit(
        &self,
        key: &str,
        until: DateTime<Utc>,
        note: Option<&str>,
        by: Option<&str>,
    ) -> Result<Option<RateLimit>> {
        Ok(sqlx::query_as(&format!(
            "WITH r AS (
                 UPDATE rate_limits SET paused_until = $2, pause_note = $3, paused_by = $4
                 WHERE key = $1 RETURNING *)
             SELECT {RATE_COLUMNS} FROM r"
        ))
        .bind(key)
        .bind(until)
        .bind(note)
        .bind(by)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Ends the pause of rate key `key`: the steps it held are woken now (notified on
    /// `tasker_wake`). `None` if no step ever used it.
    pub async fn resume_rate_limit(&self, key: &str) -> Result<Option<RateLimit>> {
        let mut tx = self.pool.begin().await?;
        let found: Option<String> = sqlx::query_scalar(
            "UPDATE rate_limits SET paused_until = NULL, pause_note = NULL, paused_by = NULL
             WHERE key = $1 RETURNING key",
        )
        .bind(key)
        .fetch_optional(&mut *tx)
        .await?;
        if found.is_none() {
            return Ok(None);
        }
        sqlx::query(
            "UPDATE steps SET next_attempt_at = tasker_clock()
             WHERE state = 'throttled' AND next_attempt_at IS NOT NULL
               AND throttle->>'kind' = 'paused' AND throttle->>'key' = $1",
        )
        .bind(key)
        .execute(&mut *tx)
        .await?;
        sqlx::query("SELECT pg_notify('tasker_wake', '')")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(sqlx::query_as(&format!(
            "SELECT {RATE_COLUMNS} FROM rate_limits r WHERE r.key = $1"
        ))
        .bind(key)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// For the gauges: slots in use by scope (the key before its `:`), and throttled steps by
    /// kind, from the partial indexes of throttled steps.
    pub async fn flow_counts(&self) -> Result<(Vec<(String, i64)>, Vec<(String, i64)>)> {
        let slots = sqlx::query_as(
            "SELECT split_part(key, ':', 1), sum(in_use)::bigint FROM concurrency_slots
             WHERE in_use > 0 GROUP BY 1",
        )
        .fetch_all(&self.pool)
        .await?;
        let throttled = sqlx::query_as(
            "SELECT 'concurrency', count(*) FROM steps
             WHERE state = 'throttled' AND throttled_on IS NOT NULL
             UNION ALL
             SELECT throttle->>'kind', count(*) FROM steps
             WHERE state = 'throttled' AND next_attempt_at IS NOT NULL GROUP BY 1",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok((slots, throttled))
    }
}
