//! Webhooks (migration 0029): saved by name with the token that saved them, read by the
//! receiving route on each request (with their secret, which nothing else reads), counted
//! when a request becomes an event.

use chrono::{DateTime, Utc};
use tasker_shared::api::{Webhook, WebhookFormat};

use super::{Result, Store};

/// A webhook as saved: its view and what only the receiving route reads.
#[derive(Debug, Clone)]
pub struct WebhookRow {
    pub view: Webhook,
    pub secret: String,
    /// The token that saved it (`None` when tokens are off).
    pub token_id: Option<i64>,
}

/// A webhook to save (`secret: None` keeps a saved one's).
#[derive(Debug)]
pub struct NewWebhook<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub format: WebhookFormat,
    pub secret: Option<&'a str>,
    pub event: Option<&'a str>,
    pub key: Option<&'a str>,
    pub id: Option<&'a str>,
    pub tolerance_seconds: i32,
    pub token_id: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct Row {
    name: String,
    namespace: String,
    format: String,
    secret: String,
    event: Option<String>,
    key_pointer: Option<String>,
    id_pointer: Option<String>,
    tolerance_seconds: i32,
    token_id: Option<i64>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    received: i64,
    last_received_at: Option<DateTime<Utc>>,
}

impl From<Row> for WebhookRow {
    fn from(r: Row) -> Self {
        WebhookRow {
            view: Webhook {
                name: r.name,
                namespace: r.namespace,
                format: WebhookFormat::parse(&r.format).unwrap_or_default(),
                event: r.event,
                key: r.key_pointer,
                id: r.id_pointer,
                tolerance_seconds: i64::from(r.tolerance_seconds),
                created_at: r.created_at,
                updated_at: r.updated_at,
                received: r.received,
                last_received_at: r.last_received_at,
                secret: None,
            },
            secret: r.secret,
            token_id: r.token_id,
        }
    }
}

const COLUMNS: &str = "name, namespace, format, secret, event, key_pointer, id_pointer,
    tolerance_seconds, token_id, created_at, updated_at, received, last_received_at";

impl Store {
    /// The webhook named `name`.
    pub async fn webhook(&self, name: &str) -> Result<Option<WebhookRow>> {
        let row: Option<Row> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM webhooks WHERE name = $1"))
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(WebhookRow::from))
    }

    /// Webhooks by name, of the namespaces matching `namespaces` (a scoped token's regex).
    pub async fn webhooks(&self, namespaces: Option<&str>) -> Result<Vec<Webhook>> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM webhooks WHERE ($1::text IS NULL OR namespace ~ $1)
             ORDER BY name"
        ))
        .bind(namespaces)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| WebhookRow::from(r).view).collect())
    }

    /// Saves `w` (created, or all of it replaced but its counts and, without a new one, its
    /// secret). Returns the saved row and whether it is new.
    pub async fn put_webhook(&self, w: &NewWebhook<'_>) -> Result<(WebhookRow, bool)> {
        let row: Row = sqlx::query_as(&format!(
            "INSERT INTO webhooks AS w (name, namespace, format, secret, event, key_pointer,
                                            id_pointer, tolerance_seconds, token_id)
                 VALUES ($1, $2, $3, COALESCE($4, ''), $5, $6, $7, $8, $9)
                 ON CONFLICT (name) DO UPDATE SET
                     namespace = excluded.namespace, format = excluded.format,
                     secret = COALESCE($4, w.secret), event = excluded.event,
                     key_pointer = excluded.key_pointer, id_pointer = excluded.id_pointer,
                     tolerance_seconds = excluded.tolerance_seconds,
                     token_id = excluded.token_id, updated_at = now()
                 RETURNING {COLUMNS}"
        ))
        .bind(w.name)
        .bind(w.namespace)
        .bind(w.format.as_str())
        .bind(w.secret)
        .bind(w.event)
        .bind(w.key)
        .bind(w.id)
        .bind(w.tolerance_seconds)
        .bind(w.token_id)
        .fetch_one(&self.pool)
        .await?;
        // Made in this statement: both times are its transaction's.
        let created = row.created_at == row.updated_at;
        Ok((row.into(), created))
    }

    /// Removes the webhook named `name`; whether there was one.
    pub async fn delete_webhook(&self, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM webhooks WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Counts a request of webhook `name` that became an event.
    pub async fn webhook_received(&self, name: &str) -> Result<()> {
        sqlx::query(
            "UPDATE webhooks SET received = received + 1, last_received_at = now()
             WHERE name = $1",
        )
        .bind(name)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
