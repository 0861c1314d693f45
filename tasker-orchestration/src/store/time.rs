//! Timers kept in PostgreSQL: wait steps (their start, their wake), tasks that start later, and
//! signals. Each timer is a column with a partial index of the rows that can still fire
//! (`steps.wake_at`, `tasks.run_at`), so reading what is due is one indexed query however many
//! steps sleep.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use tasker_shared::api::Signal;

use super::results::{Dispatched, parse_applied};
use super::{Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// What sending a signal did.
#[derive(Debug)]
pub enum Signalled {
    /// Stored; `wake` is the step waiting for it, woken now.
    Created {
        signal: Signal,
        wake: Vec<Uuid>,
    },
    /// The same signal id, name and payload again: nothing changed.
    Existing(Signal),
    /// The signal id was used with another name or payload.
    Conflict(Signal),
    /// The task has ended (its state).
    Finished(String),
    NoTask,
    /// The task holds its most signals already (`orchestrator.max_signals_per_task`).
    TooMany,
}

#[derive(serde::Deserialize)]
struct SignalRow {
    task_id: Uuid,
    signal_id: String,
    name: String,
    payload: Value,
    received_at: DateTime<Utc>,
    consumed_at: Option<DateTime<Utc>>,
}

impl From<SignalRow> for Signal {
    fn from(r: SignalRow) -> Self {
        Signal {
            task_id: r.task_id,
            name: r.name,
            signal_id: r.signal_id,
            payload: r.payload,
            received_at: r.received_at,
            consumed_by: None,
            consumed_at: r.consumed_at,
        }
    }
}

#[derive(serde::Deserialize)]
struct SignalAnswer {
    outcome: String,
    signal: Option<SignalRow>,
    #[serde(default)]
    wake: Vec<Uuid>,
    #[serde(default)]
    state: Option<String>,
}

#[derive(serde::Deserialize)]
struct WakeAnswer {
    applied: Option<Value>,
    skipped: Option<Value>,
    woken: usize,
}

#[derive(serde::Deserialize)]
struct Started {
    started: Vec<Uuid>,
    dispatch: Dispatched,
}

impl Store {
    /// Resolves up to `limit` wait steps whose time has come; returns what that leaves to do
    /// and how many were resolved.
    pub async fn wake(&self, limit: i64) -> Result<(Effects, usize)> {
        let mut conn = self.pool.acquire().await?;
        let text: String = retry_deadlocks(&mut conn, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar("SELECT tasker_wake($1)::text")
                    .bind(limit as i32)
                    .fetch_one(conn)
                    .await?)
            })
        })
        .await?;
        let answer: WakeAnswer =
            serde_json::from_str(&text).map_err(|source| super::Error::Answer {
                function: "tasker_wake",
                source,
            })?;
        let mut effects = Effects::default();
        for part in [answer.applied, answer.skipped].into_iter().flatten() {
            effects.merge(parse_applied(&part.to_string())?);
        }
        Ok((effects, answer.woken))
    }

    /// Starts up to `limit` scheduled tasks whose time has come; returns what that leaves to
    /// do and how many started.
    pub async fn start_tasks(&self, limit: i64) -> Result<(Effects, usize)> {
        let mut conn = self.pool.acquire().await?;
        let answer: Value = retry_deadlocks(&mut conn, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar("SELECT tasker_start_tasks($1)")
                    .bind(limit as i32)
                    .fetch_one(conn)
                    .await?)
            })
        })
        .await?;
        let started: Started = decode("tasker_start_tasks", answer)?;
        Ok((started.dispatch.into(), started.started.len()))
    }

    /// Sends signal `signal_id` named `name` with `payload` to `task`, which may hold at most
    /// `max` signals: a new one past that is [`Signalled::TooMany`] (the same one again is
    /// still answered as it was). The count is taken under a lock on the task's signals, so
    /// concurrent senders never pass the bound together.
    pub async fn signal(
        &self,
        task: Uuid,
        name: &str,
        signal_id: &str,
        payload: &Value,
        max: usize,
    ) -> Result<Signalled> {
        let mut conn = self.pool.acquire().await?;
        let answer: Option<Value> = retry_deadlocks(&mut conn, |conn| {
            let (name, signal_id, payload) =
                (name.to_owned(), signal_id.to_owned(), payload.clone());
            Box::pin(async move {
                let mut tx = sqlx::Connection::begin(conn).await?;
                // Its own statement: the count after it reads what committed while it waited.
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(format!("tasker.signals:{task}"))
                    .execute(&mut *tx)
                    .await?;
                let (held, again): (i64, bool) = sqlx::query_as(
                    "SELECT count(*), COALESCE(bool_or(signal_id = $2), false)
                     FROM signals WHERE task_id = $1",
                )
                .bind(task)
                .bind(&signal_id)
                .fetch_one(&mut *tx)
                .await?;
                if !again && held >= max as i64 {
                    return Ok(None);
                }
                let answer: Value = sqlx::query_scalar("SELECT tasker_signal($1, $2, $3, $4)")
                    .bind(task)
                    .bind(name)
                    .bind(signal_id)
                    .bind(payload)
                    .fetch_one(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Some(answer))
            })
        })
        .await?;
        let Some(answer) = answer else {
            return Ok(Signalled::TooMany);
        };
        let a: SignalAnswer = decode("tasker_signal", answer)?;
        let signal = a.signal.map(Signal::from);
        Ok(match (a.outcome.as_str(), signal) {
            ("created", Some(signal)) => Signalled::Created {
                signal,
                wake: a.wake,
            },
            ("existing", Some(signal)) => Signalled::Existing(signal),
            ("conflict", Some(signal)) => Signalled::Conflict(signal),
            ("finished", _) => Signalled::Finished(a.state.unwrap_or_default()),
            _ => Signalled::NoTask,
        })
    }

    /// A task's signals, oldest first, with the step that consumed each: at most `max` (a
    /// task holds no more than `orchestrator.max_signals_per_task`).
    pub async fn signals(&self, task: Uuid, max: usize) -> Result<Vec<Signal>> {
        self.list(
            sqlx::query_as(
                "SELECT g.task_id, g.name, g.signal_id, g.payload, g.received_at,
                    s.name AS consumed_by, g.consumed_at
             FROM signals g LEFT JOIN steps s ON s.id = g.consumed_by
             WHERE g.task_id = $1 ORDER BY g.received_at, g.signal_id LIMIT $2",
            )
            .bind(task)
            .bind(max as i64),
        )
        .await
    }

    /// Steps waiting, and tasks scheduled, right now (for the gauges).
    pub async fn waiting_counts(&self) -> Result<(i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM steps s WHERE tasker_held(s)),
                    (SELECT count(*) FROM tasks WHERE state = 'scheduled')",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Steps waiting for a worker (in flight, not held by the orchestrator) by namespace and
    /// handler: what `/metrics` compares with the live workers; and how many of them a worker
    /// reported running.
    pub async fn waiting_for_workers(&self) -> Result<Vec<(String, String, i64, i64)>> {
        Ok(sqlx::query_as(
            "SELECT COALESCE(s.namespace, t.namespace), s.handler, count(*),
                    count(*) FILTER (WHERE s.running_attempt = s.attempt)
             FROM steps s JOIN tasks t ON t.id = s.task_id
             WHERE tasker_sent(s) AND s.step_type NOT IN ('wait', 'child')
             GROUP BY 1, 2",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Tasks not yet finished (`scheduled`, `running`) by namespace and state: the
    /// `tasker_tasks_open` gauge (read through the state index; finished tasks are counted by
    /// `tasker_tasks_finished_total` instead, as they only grow).
    pub async fn open_tasks(&self) -> Result<Vec<(String, String, i64)>> {
        Ok(sqlx::query_as(
            "SELECT namespace, state, count(*) FROM tasks
             WHERE state IN ('scheduled', 'running') GROUP BY 1, 2",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Namespace, template, state and seconds from start to finish of the finished tasks
    /// `ids` (a task created to start later starts at its `run_at`), by primary key.
    pub async fn task_latencies(&self, ids: &[Uuid]) -> Result<Vec<(String, String, String, f64)>> {
        Ok(sqlx::query_as(
            "SELECT namespace, name, state,
                    EXTRACT(EPOCH FROM COALESCE(completed_at, tasker_now())
                        - GREATEST(created_at, COALESCE(run_at, created_at)))::float8
             FROM tasks WHERE id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await?)
    }
}
