//! Child workflows as the store sees them: what a child step just dispatched needs to start its
//! child (its pinned template, its parent's context and parents' results, its depth), and a
//! task's children. Creating the child is `tasker_create_task` with a parent link
//! ([`super::NewTask::parent`]); a task's children are read with it ([`Store::task`]).

use serde_json::Value;
use uuid::Uuid;

use super::tasks::create_task_on;
use super::{Created, NewTask, Result, Store};

/// A child step in flight whose child is not started yet.
#[derive(Debug, sqlx::FromRow)]
pub struct ChildStart {
    pub step_id: Uuid,
    pub attempt: i32,
    pub task_id: Uuid,
    /// The parent task's depth.
    pub depth: i32,
    /// The parent task's priority rank (its children's unless their template says).
    pub priority: i16,
    /// `tasker_shared::compose::ChildSpec::compile`'s form.
    pub spec: Value,
    /// The parent task's context.
    pub context: Value,
    /// The step's completed parents' results, by step name.
    pub parents: Value,
    /// The API token the tree was created for (its root's): the child is judged with it.
    pub token_id: Option<i64>,
    /// The task at the top of the tree (the parent itself when nobody started it).
    pub root: Uuid,
}

impl Store {
    /// The child steps of `steps` (id, attempt) still in flight at that attempt and without a
    /// child: those to start.
    pub async fn child_starts(&self, steps: &[(Uuid, i32)]) -> Result<Vec<ChildStart>> {
        let (ids, attempts): (Vec<Uuid>, Vec<i32>) = steps.iter().copied().unzip();
        Ok(sqlx::query_as(
            "SELECT s.id AS step_id, s.attempt, s.task_id, t.depth, t.priority, s.child AS spec,
                    t.context, t.token_id, COALESCE(t.root_task_id, t.id) AS root,
                    COALESCE((SELECT jsonb_object_agg(p.name, p.result)
                              FROM step_edges e JOIN steps p ON p.id = e.parent_id
                              WHERE e.child_id = s.id AND p.state = 'completed'),
                             '{}'::jsonb) AS parents
             FROM unnest($1::uuid[], $2::int[]) AS x(id, attempt)
             JOIN steps s ON s.id = x.id AND s.attempt = x.attempt
             JOIN tasks t ON t.id = s.task_id
             WHERE s.state = 'enqueued' AND s.step_type = 'child' AND s.child_task_id IS NULL
             ORDER BY s.id",
        )
        .bind(&ids)
        .bind(&attempts)
        .fetch_all(self.pool())
        .await?)
    }

    /// Creates a child task (`new` with its parent link) unless its tree already holds
    /// `budget` tasks below its root: `None` then. Counted under a lock on the root, so
    /// orchestrators starting children of one tree at once never pass the budget together; a
    /// start repeated after a crash (the same step attempt's key) finds its child whatever the
    /// count.
    pub async fn create_child(&self, new: NewTask<'_>, budget: u32) -> Result<Option<Created>> {
        let root = new.parent.map(|p| p.root);
        let mut tx = self.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))")
            .bind(root)
            .execute(&mut *tx)
            .await?;
        let (below, again): (i64, bool) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM tasks WHERE root_task_id = $1),
                    EXISTS (SELECT FROM tasks WHERE idempotency_key = $2 AND namespace = $3)",
        )
        .bind(root)
        .bind(&new.idempotency_key)
        .bind(&new.template.template.namespace)
        .fetch_one(&mut *tx)
        .await?;
        if !again && below >= i64::from(budget) {
            return Ok(None);
        }
        let created = create_task_on(&mut tx, new).await?;
        tx.commit().await?;
        Ok(Some(created))
    }
}
