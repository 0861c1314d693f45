//! One attempt of a step as its handler received it (`GET /v1/tasks/{id}/steps/{step}/inputs`):
//! what `tasker replay` runs the local handler on.

use serde_json::{Map, Value};
use uuid::Uuid;

use tasker_shared::api::{InputsRetry, StepInputs};

use super::{Result, Store};

/// The row behind [`StepInputs`]: the step, its task's context and its parent results built as
/// `tasker_step_messages` builds them for the step's message (a `jsonb` object, so the same
/// keys in the same order, whatever the number of parents).
#[derive(sqlx::FromRow)]
struct Row {
    task_id: Uuid,
    step_id: Uuid,
    namespace: String,
    task_name: String,
    step_name: String,
    handler: String,
    step_type: String,
    branches: sqlx::types::Json<Vec<String>>,
    attempt: i32,
    attempt_base: i32,
    max_attempts: i32,
    backoff: String,
    base_ms: i64,
    max_ms: i64,
    timeout_ms: i64,
    context: sqlx::types::Json<Value>,
    parent_results: sqlx::types::Json<Map<String, Value>>,
    input: Option<sqlx::types::Json<Value>>,
    state: String,
    error: Option<sqlx::types::Json<Value>>,
}

impl Store {
    /// The step of the task named `step` (its name or its id), as its latest attempt received
    /// it; `None` if the task has no such step.
    pub async fn step_inputs(&self, task_id: Uuid, step: &str) -> Result<Option<StepInputs>> {
        let row: Option<Row> = sqlx::query_as(
            "SELECT s.task_id, s.id AS step_id, COALESCE(s.namespace, t.namespace) AS namespace,
                    t.name AS task_name, s.name AS step_name, s.handler, s.step_type, s.branches,
                    s.attempt, s.attempt_base, s.max_attempts, s.backoff, s.base_ms, s.max_ms,
                    s.timeout_ms, t.context, s.input, s.state, s.error,
                    CASE WHEN s.parent_count = 0 THEN '{}'::jsonb
                         ELSE COALESCE((SELECT jsonb_object_agg(p.name, CASE p.state
                                          WHEN 'completed' THEN p.result
                                          ELSE jsonb_build_object('failed', true, 'error', p.error) END)
                               FROM step_edges e JOIN steps p ON p.id = e.parent_id
                               WHERE e.child_id = s.id
                                 AND (p.state = 'completed'
                                      OR (p.state = 'failed' AND p.on_failure = 'continue'))),
                               '{}'::jsonb)
                    END AS parent_results
             FROM steps s JOIN tasks t ON t.id = s.task_id
             WHERE s.task_id = $1 AND (s.name = $2 OR s.id::text = $2)",
        )
        .bind(task_id)
        .bind(step)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| StepInputs {
            task_id: r.task_id,
            step_id: r.step_id,
            namespace: r.namespace,
            task_name: r.task_name,
            step_name: r.step_name,
            handler: r.handler,
            step_type: r.step_type,
            branches: r.branches.0,
            attempt: r.attempt.max(0) as u32,
            max_attempts: (r.attempt_base + r.max_attempts).max(1) as u32,
            retry: InputsRetry {
                backoff: r.backoff,
                base_ms: r.base_ms.max(0) as u64,
                max_ms: r.max_ms.max(0) as u64,
            },
            timeout_ms: r.timeout_ms.max(0) as u64,
            context: r.context.0,
            parent_results: r.parent_results.0,
            input: r.input.map(|i| i.0),
            state: r.state,
            latest_attempt: r.attempt.max(0) as u32,
            error: r.error.map(|e| e.0),
        }))
    }
}
