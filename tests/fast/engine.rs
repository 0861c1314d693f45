//! The engine in PostgreSQL (`tasker-orchestration/sql/`) against its specification in Rust:
//! every (state, event) pair of steps and tasks is driven through the SQL functions and the
//! outcome compared with `tasker_shared`'s transition tables (`tables`); a batch of results takes
//! effect in order as if each were applied alone (`batches`), and a batch of plain successes
//! applied in one statement leaves what the general path leaves (`plain_successes`); the
//! vocabulary the schema accepts (CHECK constraints of its domains) is compared with the Rust
//! vocabulary (`vocabulary`).

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use tasker_orchestration::store::Store;
use tasker_shared::template::Loaded;
use tasker_shared::{Outcome, StepError, StepResult, StepState, TaskState};

#[path = "engine/batches.rs"]
mod batches;
#[path = "engine/creates.rs"]
mod creates;
#[path = "engine/plain_successes.rs"]
mod plain_successes;
#[path = "engine/tables.rs"]
mod tables;
#[path = "engine/vocabulary.rs"]
mod vocabulary;

const SINGLE: &str = "namespace: engine_test
name: single
version: '1'
steps:
  - name: only
    handler: h
";

/// Two roots and a step that needs both.
const ROOTS: &str = "namespace: engine_test
name: roots
version: '1'
steps:
  - name: a
    handler: h
  - name: b
    handler: h
  - name: c
    handler: h
    depends_on: [a, b]
";

struct Engine {
    store: Store,
}

impl Engine {
    async fn create(&self, loaded: &Loaded) -> anyhow::Result<Uuid> {
        let template_id = self
            .store
            .register_template(&loaded.template, "test")
            .await?
            .view()
            .id;
        let created = self
            .store
            .create_task(tasker::new_task(template_id, loaded, json!({}), None))
            .await?;
        Ok(created.task_id)
    }

    async fn step_id(&self, task: Uuid, name: &str) -> anyhow::Result<Uuid> {
        Ok(
            sqlx::query_scalar("SELECT id FROM steps WHERE task_id = $1 AND name = $2")
                .bind(task)
                .bind(name)
                .fetch_one(self.store.pool())
                .await?,
        )
    }

    async fn step_state(&self, step: Uuid) -> anyhow::Result<StepState> {
        let s: String = sqlx::query_scalar("SELECT state FROM steps WHERE id = $1")
            .bind(step)
            .fetch_one(self.store.pool())
            .await?;
        StepState::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown step state {s}"))
    }

    async fn task_state(&self, task: Uuid) -> anyhow::Result<TaskState> {
        let s: String = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(task)
            .fetch_one(self.store.pool())
            .await?;
        TaskState::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown task state {s}"))
    }

    /// Transitions recorded for a step (or, with `None`, for the task itself) into `to`.
    async fn transitions(&self, task: Uuid, step: Option<Uuid>, to: &str) -> anyhow::Result<i64> {
        tasker::transitions_into(self.store.pool(), task, step, to).await
    }

    async fn apply(&self, task: Uuid, step: Uuid, outcome: Outcome) -> anyhow::Result<()> {
        self.store
            .apply_results(&[result(task, step, outcome)])
            .await?;
        Ok(())
    }

    /// The timer's start of scheduled tasks whose time came (`tasker_start_tasks`).
    async fn start_due(&self) -> anyhow::Result<()> {
        self.store.start_tasks(100).await?;
        Ok(())
    }

    async fn cancel(&self, task: Uuid) -> anyhow::Result<()> {
        self.exec(
            "SELECT tasker_end_task($1, 'cancelled', NULL, 'engine test')",
            task,
        )
        .await
    }

    /// A repair by hand (`tasker_repair`) of the task, as if it had ended in error: retry
    /// (no resolution) or resolve `step` with a result. A refused repair changes nothing.
    async fn repair(
        &self,
        task: Uuid,
        step: Option<Uuid>,
        resolution: Option<serde_json::Value>,
    ) -> anyhow::Result<()> {
        sqlx::query("SELECT tasker_repair($1, $2, $3, 'engine-test', NULL)")
            .bind(task)
            .bind(step)
            .bind(resolution)
            .execute(self.store.pool())
            .await?;
        Ok(())
    }

    async fn exec(&self, sql: &str, id: Uuid) -> anyhow::Result<()> {
        sqlx::query(sql).bind(id).execute(self.store.pool()).await?;
        Ok(())
    }
}

/// The first attempt's result.
fn result(task: Uuid, step: Uuid, outcome: Outcome) -> StepResult {
    let now = Utc::now();
    StepResult {
        task_id: task,
        step_id: step,
        attempt: 1,
        outcome,
        started_at: now,
        finished_at: now,
        worker: "engine-test".into(),
        traceparent: None,
        streamed: None,
    }
}

fn failure(retryable: bool) -> Outcome {
    Outcome::failure(StepError::new("test", "failed on purpose"), retryable)
}

fn success() -> Outcome {
    Outcome::Success {
        result: json!({"ok": true}),
    }
}
