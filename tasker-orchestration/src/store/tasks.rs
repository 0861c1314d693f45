//! Creating and cancelling tasks: `tasker_create_tasks` inserts tasks, their steps and edges in
//! one statement (root steps already enqueued; its argument is a [`super::CreateBatch`]);
//! `tasker_end_task` cancels a running one.

use serde_json::Value;
use uuid::Uuid;

use tasker_shared::TaskState;
use tasker_shared::template::Loaded;

use super::{CreateBatch, Error, Result, Store, retry_deadlocks};
use crate::effects::Effects;

/// A task to create from a registered template.
#[derive(Debug)]
pub struct NewTask<'a> {
    pub template_id: Uuid,
    pub template: &'a Loaded,
    pub context: Value,
    pub idempotency_key: Option<String>,
    /// Start later: the task is `scheduled` until then.
    pub run_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Each child step's specification with its template pinned
    /// ([`crate::catalog::Catalog::pin_children`]), by template step index.
    pub children: Vec<Option<Value>>,
    /// For a child task: the parent step attempt that starts it.
    pub parent: Option<ParentLink>,
    /// How soon its steps start when workers are busy.
    pub priority: tasker_shared::flow::Priority,
    /// The API token (its id) the task is created on behalf of: its work started later (its
    /// children) is judged with it again. A child's is its root's; `None` without tokens.
    pub token_id: Option<i64>,
    /// Its dedupe window or debounce, if any.
    pub controls: super::Controls,
    /// The request's own deadline (its template's otherwise).
    pub deadline: Option<tasker_shared::deadline::Deadline>,
}

/// The parent step attempt a child task is started by.
#[derive(Debug, Clone, Copy)]
pub struct ParentLink {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub attempt: i32,
    /// The child's depth (its parent's + 1).
    pub depth: i32,
    /// The task at the top of the parent's tree (the parent itself when nobody started it).
    pub root: Uuid,
    pub on_parent_cancel: tasker_shared::compose::ParentCancel,
}

/// What creating a task did.
#[derive(Debug)]
pub struct Created {
    pub task_id: Uuid,
    /// False when the idempotency key matched an existing task, which is returned instead.
    pub created: bool,
    /// The template and context of the task returned (the existing one for a repeated key).
    pub template_id: Uuid,
    pub context: Value,
    /// Root steps to publish and the creation to count, now that the transaction committed.
    pub effects: Effects,
    /// For a child task: its parent step was no longer in flight, so nothing was created.
    pub parent_gone: bool,
    /// How a start control answered, when it created nothing.
    pub controlled: Option<super::Controlled>,
}

/// What `tasker_create_tasks` answered for one task of a batch.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct BatchAnswer {
    pub created: bool,
    /// The task created, or the one its idempotency key created before.
    #[serde(default)]
    pub task_id: Uuid,
    /// For an existing task, its template and context (nil and null for one created now).
    #[serde(default)]
    pub template_id: Uuid,
    #[serde(default)]
    pub context: Value,
    #[serde(default)]
    pub parent_gone: bool,
    /// Answered by a dedupe window whose task was purged (`until`: the window's end).
    #[serde(default)]
    pub deduplicated: bool,
    #[serde(default)]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Answered by a debounce: another request's task.
    #[serde(default)]
    pub debounced: bool,
}

impl BatchAnswer {
    /// How a start control answered it, if one did.
    pub fn controlled(&self) -> Option<super::Controlled> {
        if self.deduplicated {
            Some(super::Controlled::Deduplicated { until: self.until })
        } else if self.debounced {
            Some(super::Controlled::Debounced)
        } else {
            None
        }
    }
}

impl Store {
    /// Records the trace context of the span that created `task` (tracing on), so the steps
    /// dispatched for it later continue its trace. The first one stays.
    pub async fn set_traceparent(&self, task: Uuid, traceparent: &str) -> Result<()> {
        sqlx::query("UPDATE tasks SET traceparent = $2 WHERE id = $1 AND traceparent IS NULL")
            .bind(task)
            .bind(traceparent)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Creates a task, its steps and edges in one statement (`tasker_create_tasks`). Root
    /// steps are stored already `enqueued` (attempt 1) and returned for publishing.
    pub async fn create_task(&self, new: NewTask<'_>) -> Result<Created> {
        create_task_on(&mut *self.pool.acquire().await?, new).await
    }

    /// Creates every task of `batch` in one statement and one transaction; answers each in
    /// the order added, with what the commit leaves to do for all of them.
    pub async fn create_tasks(&self, batch: &CreateBatch) -> Result<(Vec<BatchAnswer>, Effects)> {
        batch.run(&mut *self.pool.acquire().await?).await
    }

    /// Cancels a running task and every step not yet terminal. Returns the task's state after
    /// the call with, if this call cancelled it, what the cancellation leaves to do; `None` if
    /// there is no such task.
    pub async fn cancel_task(&self, task_id: Uuid) -> Result<Option<(TaskState, Option<Effects>)>> {
        let cancelled: bool = retry_deadlocks(&mut *self.pool.acquire().await?, |conn| {
            Box::pin(async move {
                Ok(sqlx::query_scalar(
                    "SELECT tasker_end_task($1, 'cancelled', NULL, 'cancelled by request')",
                )
                .bind(task_id)
                .fetch_one(conn)
                .await?)
            })
        })
        .await?;
        if cancelled {
            let effects = Effects {
                finished: vec![(task_id, TaskState::Cancelled)],
                ..Effects::default()
            };
            return Ok(Some((TaskState::Cancelled, Some(effects))));
        }
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        state
            .map(|s| {
                TaskState::parse(&s)
                    .map(|st| (st, None))
                    .ok_or_else(|| Error::UnknownState(s.clone()))
            })
            .transpose()
    }
}

/// [`Store::create_task`] on `conn` (a transaction's, for a schedule's fire).
pub(super) async fn create_task_on(
    conn: &mut sqlx::PgConnection,
    new: NewTask<'_>,
) -> Result<Created> {
    let (template_id, context) = (new.template_id, new.context.clone());
    let mut batch = CreateBatch::default();
    batch.add(new).map_err(Error::Limits)?;
    let (answers, effects) = batch.run(conn).await?;
    let Some(answer) = answers.into_iter().next() else {
        return Err(Error::Answer {
            function: "tasker_create_tasks",
            source: serde::de::Error::custom("no task in the answer"),
        });
    };
    Ok(Created::from_answer(answer, template_id, context, effects))
}

impl Created {
    /// What creating one task did, from its answer in a batch: `template_id` and `context`
    /// are the request's, kept for a task created now.
    pub fn from_answer(
        answer: BatchAnswer,
        template_id: Uuid,
        context: Value,
        effects: Effects,
    ) -> Created {
        let controlled = answer.controlled();
        let (template_id, context) = if answer.created {
            (template_id, context)
        } else {
            (answer.template_id, answer.context)
        };
        Created {
            task_id: answer.task_id,
            created: answer.created,
            template_id,
            context,
            parent_gone: answer.parent_gone,
            controlled,
            effects,
        }
    }
}
