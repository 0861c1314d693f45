//! Reading step streams back (`GET /v1/tasks/{id}/stream`, the stream hub), and a task's
//! family as its stream sees it: the ancestors a child task's chunks are copied to when they
//! are kept, the descendants whose streams a `children=true` reader waits for.

use std::sync::Arc;

use uuid::Uuid;

use tasker_shared::api::StreamChunk;

use super::{Result, Store};

/// How long after its last chunk an attempt whose step is no longer in flight, and whose end
/// never came (its worker was killed), still counts as streaming.
const OPEN_AFTER_SECS: f64 = 10.0;

/// Which chunks a read of a task's stream holds besides the task's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Children<'a> {
    /// None: the task's own chunks only.
    Left,
    /// Its child tasks' (at any depth) too, of the namespaces this PostgreSQL regular
    /// expression matches (`None`: every namespace).
    Merged(Option<&'a str>),
}

/// A page of a task's stream as read: its chunks, the position to read from next, whether the
/// stream is complete, and whether its task has ended (its stream may still be completing).
#[derive(Debug, Clone)]
pub struct StreamRead {
    pub chunks: Vec<ReadChunk>,
    pub next: i64,
    pub complete: bool,
    pub task_ended: bool,
}

/// A chunk read, with its child task's namespace when it is a copy of a child's.
#[derive(Debug, Clone)]
pub struct ReadChunk {
    pub chunk: StreamChunk,
    pub namespace: Option<Arc<str>>,
}

#[derive(sqlx::FromRow)]
struct Row {
    #[sqlx(flatten)]
    chunk: StreamChunk,
    origin_namespace: Option<String>,
}

impl Store {
    /// Up to `limit` chunks of a task's stream from position `from` (of `topic` only, if given;
    /// with its children's as `children` says), the position to read from next, and whether
    /// the stream is complete: the task has ended, no attempt of it (nor, merging children, of
    /// its descendants) is still streaming, and nothing is left after `next`.
    pub async fn stream_page(
        &self,
        task: Uuid,
        from: i64,
        topic: Option<&str>,
        limit: i64,
        children: Children<'_>,
    ) -> Result<StreamRead> {
        let (merged, permit) = match children {
            Children::Left => (false, None),
            Children::Merged(permit) => (true, permit),
        };
        // Ended first, then the head, then the chunks below it: what was kept before the task
        // was seen ended is below the head, and every chunk below the head is committed.
        let (task_ended, ended, head): (bool, bool, i64) = sqlx::query_as(
            "WITH RECURSIVE family AS (
                 SELECT $1::uuid AS id
                 UNION ALL
                 SELECT t.id FROM tasks t JOIN family f ON t.parent_task_id = f.id WHERE $3)
             SELECT t.state IN ('complete', 'error', 'cancelled'),
                    t.state IN ('complete', 'error', 'cancelled') AND NOT EXISTS (
                        SELECT 1 FROM stream_attempts a JOIN steps s ON s.id = a.step_id
                         WHERE a.task_id IN (SELECT id FROM family) AND NOT a.ended
                           AND (a.last_at > tasker_now() - make_interval(secs => $2)
                                OR (a.attempt = s.attempt AND s.state = 'enqueued'))
                           AND (a.expected IS NOT NULL OR a.attempt = s.attempt)),
                    COALESCE((SELECT next_position FROM task_streams WHERE task_id = t.id), 0)
               FROM tasks t WHERE t.id = $1",
        )
        .bind(task)
        .bind(OPEN_AFTER_SECS)
        .bind(merged)
        .fetch_optional(&self.pool)
        .await?
        .unwrap_or((true, true, 0));
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT c.position AS \"offset\", COALESCE(c.origin, c.task_id) AS task_id, c.step_id,
                    COALESCE(c.origin_step, s.name, '') AS step, c.attempt, c.seq, c.topic,
                    c.text, c.data, c.ended AS \"end\", c.retry, c.at, c.origin_namespace
               FROM stream_chunks c LEFT JOIN steps s ON s.id = c.step_id AND c.origin IS NULL
              WHERE c.task_id = $1 AND c.position >= $2 AND c.position < $3
                AND ($4::text IS NULL OR c.topic = $4)
                AND (c.origin IS NULL OR ($6 AND ($7::text IS NULL OR c.origin_namespace ~ $7)))
              ORDER BY c.position LIMIT $5",
        )
        .bind(task)
        .bind(from)
        .bind(head)
        .bind(topic)
        .bind(limit)
        .bind(merged)
        .bind(permit)
        .fetch_all(&self.pool)
        .await?;
        let full = rows.len() as i64 == limit;
        let next = match rows.last() {
            Some(last) if full => last.chunk.offset + 1,
            _ => head.max(from),
        };
        let chunks = rows
            .into_iter()
            .map(|r| ReadChunk {
                chunk: r.chunk,
                namespace: r.origin_namespace.map(Arc::from),
            })
            .collect();
        Ok(StreamRead {
            chunks,
            next,
            complete: ended && !full && next >= head,
            task_ended,
        })
    }
}

/// A streaming child task's ancestors (parent first, up to its root), each with the child's
/// namespace: the streams its chunks are copied to. Tasks without a parent are not listed.
pub(super) async fn ancestors(
    tx: &mut sqlx::PgConnection,
    tasks: &[Uuid],
) -> Result<Vec<(Uuid, Uuid, Arc<str>)>> {
    let rows: Vec<(Uuid, Uuid, String)> = sqlx::query_as(
        "WITH RECURSIVE up AS (
             SELECT t.id AS task, t.parent_task_id AS ancestor, t.namespace, 1 AS depth
               FROM tasks t WHERE t.id = ANY($1) AND t.parent_task_id IS NOT NULL
             UNION ALL
             SELECT up.task, p.parent_task_id, up.namespace, up.depth + 1
               FROM up JOIN tasks p ON p.id = up.ancestor WHERE p.parent_task_id IS NOT NULL)
         SELECT task, ancestor, namespace FROM up ORDER BY task, depth",
    )
    .bind(tasks)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(t, a, ns)| (t, a, Arc::from(ns)))
        .collect())
}
