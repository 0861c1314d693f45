//! Repairing a task that ended in error (`tasker_repair`): its failed step runs again or is
//! resolved with a given result, and the steps the failure cancelled wait again.

use serde_json::Value;
use uuid::Uuid;

use super::results::{Dispatched, FinishedRow};
use super::{Result, Store, decode, retry_deadlocks};
use crate::effects::Effects;

/// A repair of a task in error, by hand ([`Store::repair`]).
#[derive(Debug, Clone, Default)]
pub struct Repair {
    /// The step to repair; `None`: the step that failed the task.
    pub step: Option<Uuid>,
    /// Complete the step with this result instead of running it again.
    pub resolution: Option<Value>,
    /// Who asked, and why: recorded in the task's history.
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// What [`Store::repair`] did.
#[derive(Debug)]
pub enum Repaired {
    /// Committed: the steps to publish and the tasks that finished.
    Done(Box<Effects>),
    /// Refused with a stable code (`task_not_found`, `task_not_failed`, `step_not_found`,
    /// `step_not_failed`, `invalid_result`); nothing changed.
    Refused { code: String, message: String },
}

impl Store {
    /// Repairs a task that ended in error ([`Repair`]): its failed step runs again, or is
    /// completed with a supplied result, and the steps the failure cancelled wait for their
    /// parents again. Returns what the repair leaves to do, or why it was refused (having
    /// changed nothing).
    pub async fn repair(&self, task_id: Uuid, repair: &Repair) -> Result<Repaired> {
        let v: Value = retry_deadlocks(&mut *self.pool.acquire().await?, |conn| {
            let repair = repair.clone();
            Box::pin(async move {
                Ok(
                    sqlx::query_scalar("SELECT tasker_repair($1, $2, $3, $4, $5)")
                        .bind(task_id)
                        .bind(repair.step)
                        .bind(repair.resolution)
                        .bind(repair.by)
                        .bind(repair.reason)
                        .fetch_one(conn)
                        .await?,
                )
            })
        })
        .await?;
        Ok(decode::<Answer>("tasker_repair", v)?.into())
    }
}

/// `tasker_repair`'s answer.
#[derive(serde::Deserialize)]
#[serde(untagged)]
pub(super) enum Answer {
    Refused {
        refused: String,
        message: String,
    },
    Done {
        dispatch: Dispatched,
        finished: Vec<FinishedRow>,
    },
}

impl From<Answer> for Repaired {
    fn from(a: Answer) -> Self {
        match a {
            Answer::Refused { refused, message } => Repaired::Refused {
                code: refused,
                message,
            },
            Answer::Done { dispatch, finished } => Repaired::Done(Box::new(Effects {
                finished: finished.into_iter().map(|f| (f.task_id, f.state)).collect(),
                ..dispatch.into()
            })),
        }
    }
}
