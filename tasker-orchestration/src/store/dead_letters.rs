//! The dead letters kept in `dead_letters` (migration 0009): recorded by the orchestrator that
//! takes them from the dead-letter queue, listed, shown, replayed and discarded through the API.

use std::future::Future;

use serde_json::Value;
use sqlx::FromRow;
use uuid::Uuid;

use super::{Result, Store};

/// A message to keep.
#[derive(Debug, Clone)]
pub struct NewDeadLetter {
    pub queue: Option<String>,
    pub reason: String,
    /// Who sent it (`None`: nobody the orchestrator can name; a replay then moves nothing).
    pub sender: Option<String>,
    pub body: Vec<u8>,
    pub headers: Value,
    /// The task and step of its first entry.
    pub task_id: Option<Uuid>,
    pub step_id: Option<Uuid>,
    /// The task of every entry (empty: its body could not be read that far).
    pub task_ids: Vec<Uuid>,
}

/// A dead letter as listed: everything but its body and headers.
pub use tasker_shared::api::DeadLetterInfo as DeadLetterView;

/// A dead letter with its body and headers.
#[derive(Debug, Clone, FromRow)]
pub struct DeadLetter {
    #[sqlx(flatten)]
    pub view: DeadLetterView,
    pub body: Vec<u8>,
    pub headers: Value,
}

pub(super) const COLUMNS: &str =
    "id, queue, reason, task_id, step_id, first_seen, last_seen, times_seen,
    octet_length(body) AS bytes, sender, namespaces";

impl Store {
    /// Keeps a dead letter with the namespaces of every task its entries name (none when one
    /// names no task); the same body from the same queue again counts as seen again (its
    /// reason and sender become the latest). Returns its id.
    pub async fn record_dead_letter(&self, letter: &NewDeadLetter) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO dead_letters (queue, reason, body, digest, headers, task_id, step_id,
                                       sender, namespaces)
             VALUES ($1, $2, $3, sha256($3), $4, $5, $6, $7,
                     (SELECT CASE WHEN bool_and(t.id IS NOT NULL)
                                  THEN array_agg(DISTINCT t.namespace) END
                      FROM unnest($8::uuid[]) AS x(id) LEFT JOIN tasks t ON t.id = x.id))
             ON CONFLICT (digest, (coalesce(queue, ''))) DO UPDATE
                SET last_seen = now(), times_seen = dead_letters.times_seen + 1,
                    reason = EXCLUDED.reason, headers = EXCLUDED.headers,
                    sender = EXCLUDED.sender, namespaces = EXCLUDED.namespaces
             RETURNING id",
        )
        .bind(&letter.queue)
        .bind(&letter.reason)
        .bind(&letter.body)
        .bind(&letter.headers)
        .bind(letter.task_id)
        .bind(letter.step_id)
        .bind(&letter.sender)
        .bind(&letter.task_ids)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Dead letters newest first, `limit` of them with an id below `before`; with
    /// `namespaces` (a PostgreSQL regular expression), only those whose every entry names a
    /// task of a matching namespace; with `queue` and `reason`, only those from that queue and
    /// whose reason starts with that.
    pub async fn dead_letters(
        &self,
        before: Option<i64>,
        limit: i64,
        namespaces: Option<&str>,
        (queue, reason): (Option<&str>, Option<&str>),
    ) -> Result<Vec<DeadLetterView>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM dead_letters d
             WHERE ($1::bigint IS NULL OR d.id < $1)
               AND ($4::text IS NULL OR d.queue = $4)
               AND ($5::text IS NULL OR starts_with(d.reason, $5))
               AND ($3::text IS NULL
                    OR (d.namespaces IS NOT NULL
                        AND NOT EXISTS (SELECT FROM unnest(d.namespaces) AS n(ns)
                                        WHERE n.ns !~ $3)))
             ORDER BY d.id DESC LIMIT $2"
        ))
        .bind(before)
        .bind(limit)
        .bind(namespaces)
        .bind(queue)
        .bind(reason)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The namespaces of the tasks dead letter `id`'s entries name: `None` if there is no such
    /// dead letter, `Some(None)` if one of them names no task (or one that does not exist).
    pub async fn dead_letter_namespaces(&self, id: i64) -> Result<Option<Option<Vec<String>>>> {
        Ok(
            sqlx::query_scalar("SELECT namespaces FROM dead_letters WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn dead_letter(&self, id: i64) -> Result<Option<DeadLetter>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS}, body, headers FROM dead_letters WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Removes a dead letter; whether there was one.
    pub async fn discard_dead_letter(&self, id: i64) -> Result<bool> {
        let done = sqlx::query("DELETE FROM dead_letters WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Takes a dead letter out to `send` it: it is removed only if `send` succeeds, and two
    /// replays of one letter at once send it once (the second finds nothing). `None`: no such
    /// dead letter.
    pub async fn replay_dead_letter<F, Fut, E>(
        &self,
        id: i64,
        send: F,
    ) -> Result<Option<std::result::Result<DeadLetter, E>>>
    where
        F: FnOnce(DeadLetter) -> Fut,
        Fut: Future<Output = std::result::Result<DeadLetter, E>>,
    {
        let mut tx = self.pool.begin().await?;
        let letter: Option<DeadLetter> = sqlx::query_as(&format!(
            "DELETE FROM dead_letters WHERE id = $1 RETURNING {COLUMNS}, body, headers"
        ))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(letter) = letter else {
            return Ok(None);
        };
        let sent = send(letter).await;
        if sent.is_ok() {
            tx.commit().await?;
        }
        Ok(Some(sent))
    }
}
