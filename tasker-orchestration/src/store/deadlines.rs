//! Deadlines (migration 0030): the timers give each running task past its `deadline_at` its
//! action once (`tasker_pass_deadlines`), from PostgreSQL, so any orchestrator does it after
//! any restart.

use tasker_shared::TaskState;
use uuid::Uuid;

use super::{Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// What one pass over the deadlines did.
#[derive(Debug, Default)]
pub struct Passed {
    /// Tasks it ended (`fail`: error, `cancel`: cancelled), to announce.
    pub effects: Effects,
    /// Tasks whose deadline only alerted: they run on.
    pub alerted: Vec<Uuid>,
}

impl Passed {
    /// How many tasks it acted on.
    pub fn count(&self) -> usize {
        self.effects.finished.len() + self.alerted.len()
    }
}

#[derive(serde::Deserialize)]
struct Answer {
    ended: Vec<Ended>,
    alerted: Vec<Uuid>,
}

#[derive(serde::Deserialize)]
struct Ended {
    task_id: Uuid,
    state: String,
}

impl Store {
    /// Gives at most `limit` running tasks past their deadline their action.
    pub async fn pass_deadlines(&self, limit: i64) -> Result<Passed> {
        let mut conn = self.pool.acquire().await?;
        let answer: serde_json::Value = retry_deadlocks(&mut conn, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar("SELECT tasker_pass_deadlines($1)")
                    .bind(limit as i32)
                    .fetch_one(conn)
                    .await?)
            })
        })
        .await?;
        let answer: Answer = decode("tasker_pass_deadlines", answer)?;
        let finished = answer
            .ended
            .into_iter()
            .map(|e| {
                let state = TaskState::parse(&e.state).unwrap_or(TaskState::Error);
                (e.task_id, state)
            })
            .collect();
        Ok(Passed {
            effects: Effects {
                finished,
                ..Effects::default()
            },
            alerted: answer.alerted,
        })
    }
}
