//! Alert checks and notices (migration 0031): the rules due, taken one transaction at a time
//! (`FOR UPDATE SKIP LOCKED`: two orchestrators never check one rule at once), what each
//! condition counts now, what a check decided, and the notices on their way to the sinks.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use tasker_shared::api::{AlertCondition, AlertKind, AlertSink};

use super::{Result, Store};

/// A rule due for a check, as its transaction holds it.
#[derive(Debug, sqlx::FromRow)]
pub struct DueRule {
    pub name: String,
    pub namespace: String,
    pub condition: Json<AlertCondition>,
    pub token_id: Option<i64>,
    pub firing: bool,
    pub notified: bool,
    pub noticed_at: Option<DateTime<Utc>>,
    pub suppress_ms: i64,
}

/// What a check decided for a rule.
#[derive(Debug, Default, PartialEq)]
pub struct Checked {
    pub observed: i64,
    pub firing: bool,
    pub notified: bool,
    /// It began to fire, or cleared, at this check.
    pub began: bool,
    pub cleared: bool,
    /// A firing notice was held back (suppression).
    pub suppressed: bool,
    /// The notice to send, if any.
    pub notice: Option<Value>,
}

/// A notice taken to send: the rule's sink and secret as they are now.
#[derive(Debug, sqlx::FromRow)]
pub struct Outgoing {
    pub id: i64,
    pub rule: String,
    pub payload: Value,
    pub attempts: i32,
    pub sink: Json<AlertSink>,
    pub secret: Option<String>,
}

/// The rules due, in one transaction that holds them until [`AlertChecks::commit`].
#[derive(Debug)]
pub struct AlertChecks {
    tx: Transaction<'static, Postgres>,
    pub due: Vec<DueRule>,
}

/// How often a rule is checked.
pub const CHECK_EVERY_MS: f64 = 1000.0;

impl Store {
    /// Up to `limit` rules due for a check, held by this transaction (others skip them).
    pub async fn due_alerts(&self, limit: i64) -> Result<AlertChecks> {
        let mut tx = self.pool.begin().await?;
        let due = sqlx::query_as(
            "SELECT name, namespace, condition, token_id, firing, notified, noticed_at, suppress_ms
             FROM alert_rules WHERE next_check_at <= now()
             ORDER BY next_check_at LIMIT $1 FOR UPDATE SKIP LOCKED",
        )
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        Ok(AlertChecks { tx, due })
    }

    /// Up to `limit` notices due, leased to this orchestrator for `lease_secs` (another takes
    /// one up when the lease runs out: one whose sender died is not lost).
    pub async fn take_notices(&self, limit: i64, lease_secs: f64) -> Result<Vec<Outgoing>> {
        Ok(sqlx::query_as(
            "WITH taken AS (
                 UPDATE alert_notices n
                 SET attempts = attempts + 1,
                     next_attempt_at = now() + make_interval(secs => $2)
                 WHERE id IN (SELECT id FROM alert_notices
                              WHERE sent_at IS NULL AND failed_at IS NULL
                                AND next_attempt_at <= now()
                              ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
                 RETURNING n.id, n.rule, n.payload, n.attempts
             )
             SELECT t.id, t.rule, t.payload, t.attempts, r.sink, r.secret
             FROM taken t JOIN alert_rules r ON r.name = t.rule ORDER BY t.id",
        )
        .bind(limit)
        .bind(lease_secs)
        .fetch_all(&self.pool)
        .await?)
    }

    /// A notice delivered.
    pub async fn notice_sent(&self, n: &Outgoing) -> Result<()> {
        self.notice_ended(
            n,
            "WITH sent AS (UPDATE alert_notices SET sent_at = now(), error = NULL
                           WHERE id = $1 AND sent_at IS NULL RETURNING rule)
             UPDATE alert_rules SET sent = sent + 1, last_error = NULL
             WHERE name IN (SELECT rule FROM sent)",
            None,
        )
        .await
    }

    /// A delivery that failed: tried again in `retry_secs`, or (`None`) given up on.
    pub async fn notice_failed(
        &self,
        n: &Outgoing,
        error: &str,
        retry_secs: Option<f64>,
    ) -> Result<()> {
        self.notice_ended(
            n,
            "WITH failed AS (
                 UPDATE alert_notices
                 SET error = $2,
                     failed_at = CASE WHEN $3::float8 IS NULL THEN now() END,
                     next_attempt_at = now() + make_interval(secs => COALESCE($3, 0))
                 WHERE id = $1 AND sent_at IS NULL RETURNING rule
             )
             UPDATE alert_rules
             SET failed = failed + CASE WHEN $3::float8 IS NULL THEN 1 ELSE 0 END, last_error = $2
             WHERE name IN (SELECT rule FROM failed)",
            Some((error, retry_secs)),
        )
        .await
    }

    /// Records how a delivery ended (`sql` on the notice, then its rule), its rule locked first:
    /// the order every writer of both takes (the checks write a rule's notices while they hold
    /// it; removing a rule removes its notices), so recording one beside a removal of its rule
    /// cannot deadlock. A rule removed meanwhile leaves nothing to record.
    async fn notice_ended(
        &self,
        n: &Outgoing,
        sql: &str,
        failure: Option<(&str, Option<f64>)>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let held = sqlx::query("SELECT 1 FROM alert_rules WHERE name = $1 FOR UPDATE")
            .bind(&n.rule)
            .fetch_optional(&mut *tx)
            .await?;
        if held.is_some() {
            let mut q = sqlx::query(sql).bind(n.id);
            if let Some((error, retry_secs)) = failure {
                q = q.bind(error).bind(retry_secs);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Removes the notices that ended (sent or given up on) more than a day ago.
    pub async fn purge_notices(&self) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM alert_notices
             WHERE COALESCE(sent_at, failed_at) < now() - interval '1 day'",
        )
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}

impl AlertChecks {
    /// What `rule`'s condition counts now in its namespace (`within_ms` back, or steps waiting
    /// longer than `longer_than_ms`). Every query is bound all four parameters, typed, whether
    /// it reads them or not.
    pub async fn observe(
        &mut self,
        rule: &DueRule,
        within_ms: i64,
        longer_than_ms: i64,
    ) -> Result<i64> {
        let c = &rule.condition.0;
        let sql = match c.kind {
            AlertKind::Failures => {
                "SELECT count(*) FROM tasks
                 WHERE state = 'error' AND completed_at > now() - make_interval(secs => $3 / 1000.0)
                   AND namespace = $1 AND ($2::text IS NULL OR name = $2)"
            }
            AlertKind::DeadlinePassed => {
                "SELECT count(*) FROM tasks
                 WHERE deadline_passed_at > now() - make_interval(secs => $3 / 1000.0)
                   AND namespace = $1 AND ($2::text IS NULL OR name = $2)"
            }
            AlertKind::ScheduleSkipped => {
                "SELECT count(*) FROM schedules
                 WHERE last_skipped_at > now() - make_interval(secs => $3 / 1000.0)
                   AND namespace = $1 AND ($2::text IS NULL OR name = $2)"
            }
            AlertKind::DeadLetters => {
                "SELECT count(*) FROM dead_letters
                 WHERE first_seen > now() - make_interval(secs => $3 / 1000.0)
                   AND $1 = ANY (namespaces)"
            }
            AlertKind::StepsWaiting => {
                // Two counts, each through its own partial index: steps no worker has started,
                // and steps throttled by a limit.
                "SELECT (SELECT count(*) FROM steps s JOIN tasks t ON t.id = s.task_id
                         WHERE tasker_sent(s) AND s.step_type NOT IN ('wait', 'child')
                           AND s.running_attempt IS DISTINCT FROM s.attempt
                           AND s.dispatched_at < now() - make_interval(secs => $4 / 1000.0)
                           AND COALESCE(s.namespace, t.namespace) = $1)
                      + (SELECT count(*) FROM steps s JOIN tasks t ON t.id = s.task_id
                         WHERE s.state = 'throttled'
                           AND (s.throttle->>'since')::timestamptz
                               < now() - make_interval(secs => $4 / 1000.0)
                           AND COALESCE(s.namespace, t.namespace) = $1)"
            }
        };
        let filter = match c.kind {
            AlertKind::ScheduleSkipped => c.schedule.as_deref(),
            AlertKind::DeadLetters | AlertKind::StepsWaiting => None,
            _ => c.template.as_deref(),
        };
        Ok(sqlx::query_scalar(sql)
            .bind(&rule.namespace)
            .bind(filter)
            .bind(within_ms as f64)
            .bind(longer_than_ms as f64)
            .fetch_one(&mut *self.tx)
            .await?)
    }

    /// Records a check of `rule` (and queues its notice, if any); it is due again in a second.
    pub async fn record(&mut self, rule: &DueRule, c: &Checked) -> Result<()> {
        sqlx::query(
            "UPDATE alert_rules
             SET firing = $2, notified = $3, observed = $4, checked_at = now(),
                 next_check_at = now() + make_interval(secs => $9 / 1000.0),
                 fired_at = CASE WHEN $5 THEN now() ELSE fired_at END,
                 resolved_at = CASE WHEN $6 THEN now() ELSE resolved_at END,
                 noticed_at = CASE WHEN $7 AND $2 THEN now() ELSE noticed_at END,
                 suppressed = suppressed + CASE WHEN $8 THEN 1 ELSE 0 END,
                 last_error = CASE WHEN last_error LIKE 'not checked:%' THEN NULL
                                   ELSE last_error END
             WHERE name = $1",
        )
        .bind(&rule.name)
        .bind(c.firing)
        .bind(c.notified)
        .bind(c.observed)
        .bind(c.began)
        .bind(c.cleared)
        .bind(c.notice.is_some())
        .bind(c.suppressed)
        .bind(CHECK_EVERY_MS)
        .execute(&mut *self.tx)
        .await?;
        if let Some(payload) = &c.notice {
            sqlx::query("INSERT INTO alert_notices (rule, payload) VALUES ($1, $2)")
                .bind(&rule.name)
                .bind(payload)
                .execute(&mut *self.tx)
                .await?;
        }
        Ok(())
    }

    /// `rule` is not checked now (`why`: its token was revoked, or no longer covers its
    /// namespace); it is looked at again in a second.
    pub async fn pause(&mut self, rule: &DueRule, why: &str) -> Result<()> {
        sqlx::query(
            "UPDATE alert_rules
             SET last_error = 'not checked: ' || $2,
                 next_check_at = now() + make_interval(secs => $3 / 1000.0)
             WHERE name = $1",
        )
        .bind(&rule.name)
        .bind(why)
        .bind(CHECK_EVERY_MS)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    pub async fn commit(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }
}
