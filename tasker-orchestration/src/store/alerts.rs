//! Alert rules (migration 0031): saved by name with the token that saved them, shown with what
//! they last did. Their checks and notices are `alert_checks`'.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use tasker_shared::api::{Alert, AlertCondition, AlertSink};

use super::{Result, Store};

/// A rule as saved: its view and what only the checks and the sender read.
#[derive(Debug, Clone)]
pub struct AlertRow {
    pub view: Alert,
    pub secret: Option<String>,
    /// The token that saved it (`None` when tokens are off).
    pub token_id: Option<i64>,
}

/// A rule to save (`secret: None` keeps a saved one's).
#[derive(Debug)]
pub struct NewAlert<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub when: &'a AlertCondition,
    pub sink: &'a AlertSink,
    pub secret: Option<&'a str>,
    pub suppress_ms: i64,
    pub token_id: Option<i64>,
}

#[derive(sqlx::FromRow)]
pub(super) struct Row {
    name: String,
    namespace: String,
    condition: Json<AlertCondition>,
    sink: Json<AlertSink>,
    secret: Option<String>,
    suppress_ms: i64,
    token_id: Option<i64>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    firing: bool,
    observed: Option<i64>,
    checked_at: Option<DateTime<Utc>>,
    fired_at: Option<DateTime<Utc>>,
    resolved_at: Option<DateTime<Utc>>,
    sent: i64,
    failed: i64,
    suppressed: i64,
    last_error: Option<String>,
}

impl From<Row> for AlertRow {
    fn from(r: Row) -> Self {
        AlertRow {
            view: Alert {
                name: r.name,
                namespace: r.namespace,
                when: r.condition.0,
                sink: r.sink.0,
                suppress_seconds: r.suppress_ms / 1000,
                state: if r.firing { "firing" } else { "ok" }.into(),
                observed: r.observed,
                checked_at: r.checked_at,
                fired_at: r.fired_at,
                resolved_at: r.resolved_at,
                sent: r.sent,
                failed: r.failed,
                suppressed: r.suppressed,
                last_error: r.last_error,
                created_at: r.created_at,
                updated_at: r.updated_at,
                secret: None,
            },
            secret: r.secret,
            token_id: r.token_id,
        }
    }
}

pub(super) const COLUMNS: &str = "name, namespace, condition, sink, secret, suppress_ms, token_id,
    created_at, updated_at, firing, observed, checked_at, fired_at, resolved_at, sent, failed,
    suppressed, last_error";

impl Store {
    /// The alert rule named `name`.
    pub async fn alert(&self, name: &str) -> Result<Option<AlertRow>> {
        let row: Option<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM alert_rules WHERE name = $1"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(AlertRow::from))
    }

    /// Alert rules by name, of the namespaces matching `namespaces` (a scoped token's regex).
    pub async fn alerts(&self, namespaces: Option<&str>) -> Result<Vec<Alert>> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM alert_rules WHERE ($1::text IS NULL OR namespace ~ $1)
             ORDER BY name"
        ))
        .bind(namespaces)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| AlertRow::from(r).view).collect())
    }

    /// Saves `a` (created, or all of it replaced but what it last did and, without a new one,
    /// its secret; checked at once either way). Returns the saved row and whether it is new.
    pub async fn put_alert(&self, a: &NewAlert<'_>) -> Result<(AlertRow, bool)> {
        let row: Row = sqlx::query_as(&format!(
            "INSERT INTO alert_rules AS r (name, namespace, condition, sink, secret, suppress_ms,
                                           token_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (name) DO UPDATE SET
                     namespace = excluded.namespace, condition = excluded.condition,
                     sink = excluded.sink, secret = COALESCE($5, r.secret),
                     suppress_ms = excluded.suppress_ms, token_id = excluded.token_id,
                     updated_at = now(), next_check_at = now(), last_error = NULL
                 RETURNING {COLUMNS}"
        ))
        .bind(a.name)
        .bind(a.namespace)
        .bind(Json(a.when))
        .bind(Json(a.sink))
        .bind(a.secret)
        .bind(a.suppress_ms)
        .bind(a.token_id)
        .fetch_one(&self.pool)
        .await?;
        // Made in this statement: both times are its transaction's.
        let created = row.created_at == row.updated_at;
        Ok((row.into(), created))
    }

    /// Removes the rule named `name` and its notices not sent yet; whether there was one.
    pub async fn delete_alert(&self, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM alert_rules WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
