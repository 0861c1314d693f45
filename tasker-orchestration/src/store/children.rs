//! Child workflows as the store sees them: what a child step just dispatched needs to start its
//! child (its pinned template, its parent's context and parents' results, its depth), and a
//! task's children. Creating the child is `tasker_create_task` with a parent link
//! ([`super::NewTask::parent`]); a task's children are read with it ([`Store::task`]).

use serde_json::Value;
use uuid::Uuid;

use super::{Result, Store};

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
}

impl Store {
    /// The child steps of `steps` (id, attempt) still in flight at that attempt and without a
    /// child: those to start.
    pub async fn child_starts(&self, steps: &[(Uuid, i32)]) -> Result<Vec<ChildStart>> {
        let (ids, attempts): (Vec<Uuid>, Vec<i32>) = steps.iter().copied().unzip();
        Ok(sqlx::query_as(
            "SELECT s.id AS step_id, s.attempt, s.task_id, t.depth, t.priority, s.child AS spec,
                    t.context,
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
}
