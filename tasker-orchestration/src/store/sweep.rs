//! What the sweeper reads and changes: steps past their queue timeout, steps whose publication
//! was lost with their orchestrator, retries whose backoff elapsed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::FromRow;
use uuid::Uuid;

use tasker_shared::StepResult;

use super::results::Dispatched;
use super::{Result, Store, decode};
use crate::effects::Effects;

#[derive(FromRow)]
struct OverdueRow {
    id: Uuid,
    task_id: Uuid,
    attempt: i32,
    dispatched_at: DateTime<Utc>,
    queue_timeout_ms: i64,
}

impl Store {
    /// Steps with a queue timeout that are still in flight past it, plus their run timeout and
    /// `grace` (by then they have either run to their own timeout or never started), as
    /// synthetic `queue_timeout` results to apply like any other result. A step without a
    /// queue timeout is never failed here: the worker bounds the handler's run from its start,
    /// and the broker redelivers the steps of a worker that vanished.
    pub async fn overdue(&self, grace: Duration, limit: i64) -> Result<Vec<StepResult>> {
        let rows: Vec<OverdueRow> = sqlx::query_as(
            "SELECT id, task_id, attempt, dispatched_at, queue_timeout_ms FROM steps s
             WHERE tasker_sent(s) AND queue_timeout_ms IS NOT NULL
               -- LEAST: a stored timeout beyond what templates allow (60 days in all) must not
               -- overflow the timestamp arithmetic and fail the sweep for everyone.
               AND dispatched_at < tasker_clock() - make_interval(
                       secs => LEAST(queue_timeout_ms + timeout_ms + $1, 5184000000)::float8 / 1000)
             ORDER BY dispatched_at LIMIT $2",
        )
        .bind(grace.as_millis() as i64)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|row| StepResult {
                started_at: row.dispatched_at,
                ..StepResult::permanent_failure(
                    row.task_id,
                    row.id,
                    row.attempt as u32,
                    "queue_timeout",
                    format!(
                        "no worker started the step within its queue timeout ({} ms)",
                        row.queue_timeout_ms
                    ),
                    "sweeper",
                )
            })
            .collect())
    }

    /// Hands steps whose messages this orchestrator dropped (a full backlog) to the sweeper:
    /// as if their dispatcher had died.
    pub async fn release(&self, steps: &[(Uuid, u32)]) -> Result<()> {
        let (ids, attempts): (Vec<Uuid>, Vec<i32>) =
            steps.iter().map(|&(id, a)| (id, a as i32)).unzip();
        sqlx::query(
            "UPDATE steps s SET dispatched_by = NULL
             FROM unnest($1::uuid[], $2::int[]) AS p(id, attempt)
             WHERE s.id = p.id AND s.attempt = p.attempt AND s.state = 'enqueued'",
        )
        .bind(&ids)
        .bind(&attempts)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Steps enqueued longer than `visibility` by an orchestrator that has not heartbeat for as
    /// long (it died between commit and publish, or dropped them): publish them once more. A
    /// live orchestrator publishes what it dispatched, so a healthy step that runs longer than
    /// `visibility` is never sent twice.
    pub async fn republish(&self, visibility: Duration, limit: i64) -> Result<Effects> {
        let mut tx = self.pool.begin().await?;
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "UPDATE steps SET publish_count = publish_count + 1,
                              dispatched_by = tasker_orchestrator()
             WHERE id IN (SELECT s.id FROM steps s
                          WHERE s.publish_count = 1
                            -- A step held by the orchestrators (tasker_held) is not lost.
                            AND tasker_sent(s)
                            -- tasker_now(): a bound the index can range over (tasker_clock()
                            -- is volatile, so it would filter every step in flight instead).
                            AND s.dispatched_at < tasker_now() - make_interval(secs => $1)
                            AND NOT EXISTS (
                                SELECT 1 FROM orchestrators o
                                WHERE o.id = s.dispatched_by
                                  AND o.heartbeat_at > clock_timestamp() - make_interval(secs => $1))
                          ORDER BY s.dispatched_at LIMIT $2
                          FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .bind(visibility.as_secs_f64())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        // The steps it holds go where they belong (a wait begins, a child starts): what an
        // older build dispatched without holding them, or a child whose start failed.
        let dispatched: Value = sqlx::query_scalar("SELECT tasker_dispatched($1)")
            .bind(&ids)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut effects: Effects = decode::<Dispatched>("tasker_dispatched", dispatched)?.into();
        effects.republished = ids.len();
        Ok(effects)
    }

    /// Steps whose backoff has elapsed (the orchestrator that scheduled them may have died).
    pub async fn due_retries(&self, limit: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM steps WHERE state = 'waiting_retry' AND next_attempt_at <= tasker_now()
             ORDER BY next_attempt_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
