//! The audit log in `audit_log` (migration 0021): rows appended a batch per statement by the
//! writer (`crate::audit`), read newest first through the API; never updated, and deleted only
//! by the retention purge ([`super::PurgeSession::audit`]), which the table's trigger enforces.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

pub use tasker_shared::api::AuditEntry;

use super::{Result, Store};

/// A row to append.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NewAuditEntry {
    /// When the request arrived.
    pub at: DateTime<Utc>,
    pub token_id: Option<i64>,
    pub token_name: Option<String>,
    pub method: &'static str,
    pub route: String,
    pub status: u16,
    pub peer: Option<IpAddr>,
    pub forwarded_for: Option<String>,
    /// The namespaces the request named; left empty for a task's route, the task's namespace
    /// is looked up when the row is written.
    pub namespaces: Vec<String>,
    pub task_id: Option<Uuid>,
    pub target: Map<String, Value>,
}

/// What `GET /v1/audit` asks for.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Rows naming this namespace.
    pub namespace: Option<String>,
    /// Rows of the token of this name.
    pub token: Option<String>,
    /// Rows of this route pattern (`/v1/tasks/{id}/cancel`).
    pub route: Option<String>,
    pub method: Option<String>,
    /// Requests that arrived at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Requests that arrived before this.
    pub until: Option<DateTime<Utc>>,
    /// A scoped token's namespaces (a PostgreSQL regular expression): only rows naming
    /// namespaces, all of them matching it.
    pub namespaces: Option<String>,
    /// Rows with an id below this (the previous page's last).
    pub before: Option<i64>,
    pub limit: i64,
}

impl Store {
    /// Appends `rows` in one statement; returns how many. Its commit does not wait for the WAL
    /// to reach the disk (`synchronous_commit` off for this transaction alone): the tasks'
    /// own durable commits do not queue behind the audit log's, and a crash of PostgreSQL can
    /// lose the rows of its last moment (the WAL writer flushes within `wal_writer_delay`,
    /// 200 ms by default), as a crash of the orchestrator loses the rows it had not written.
    pub async fn append_audit(&self, rows: &[NewAuditEntry]) -> Result<u64> {
        let rows = serde_json::to_value(rows).map_err(super::Error::Encode)?;
        let done = sqlx::query(
            "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true))
             INSERT INTO audit_log (at, token_id, token_name, method, route, status, peer,
                                    forwarded_for, namespaces, task_id, target)
             SELECT r.at, r.token_id, r.token_name, r.method, r.route, r.status, r.peer,
                    r.forwarded_for,
                    CASE WHEN cardinality(r.namespaces) = 0 AND r.task_id IS NOT NULL
                         THEN coalesce((SELECT ARRAY[t.namespace] FROM tasks t
                                        WHERE t.id = r.task_id), '{}')
                         ELSE r.namespaces END,
                    r.task_id, r.target
             FROM relaxed, jsonb_to_recordset($1) AS r(at timestamptz, token_id bigint,
                  token_name text, method text, route text, status smallint, peer inet,
                  forwarded_for text, namespaces text[], task_id uuid, target jsonb)
             ORDER BY r.at",
        )
        .bind(rows)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Rows newest first, as `filter` says.
    pub async fn audit(&self, f: &AuditFilter) -> Result<Vec<AuditEntry>> {
        Ok(sqlx::query_as(
            "SELECT id, at, token_id, token_name, method, route, status, host(peer) AS peer,
                    forwarded_for, namespaces, task_id, target
             FROM audit_log
             WHERE ($1::bigint IS NULL OR id < $1)
               AND ($2::text IS NULL OR $2 = ANY (namespaces))
               AND ($3::text IS NULL OR token_name = $3)
               AND ($4::text IS NULL OR route = $4)
               AND ($5::text IS NULL OR method = $5)
               AND ($6::timestamptz IS NULL OR at >= $6)
               AND ($7::timestamptz IS NULL OR at < $7)
               AND ($8::text IS NULL OR (cardinality(namespaces) > 0
                    AND NOT EXISTS (SELECT FROM unnest(namespaces) n WHERE n !~ $8)))
             ORDER BY id DESC LIMIT $9",
        )
        .bind(f.before)
        .bind(&f.namespace)
        .bind(&f.token)
        .bind(&f.route)
        .bind(&f.method)
        .bind(f.since)
        .bind(f.until)
        .bind(&f.namespaces)
        .bind(f.limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
