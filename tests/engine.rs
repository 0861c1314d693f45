//! The engine in PostgreSQL (`tasker-orchestration/sql/`) against its specification in Rust:
//! every (state, event) pair of steps and tasks is driven through the SQL functions and the
//! outcome compared with `tasker_shared`'s transition tables; the schema's CHECK constraints
//! are compared with the Rust vocabulary.

use std::collections::BTreeSet;

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::{NewTask, Store};
use tasker_shared::template::Loaded;
use tasker_shared::{
    Backoff, FailurePolicy, Outcome, StepError, StepEvent, StepResult, StepState, StepType,
    TaskEvent, TaskState, TaskTemplate,
};

const PAIR: &str = "namespace: engine_test
name: pair
version: '1'
steps:
  - name: a
    handler: h
  - name: b
    handler: h
    depends_on: [a]
    retry: { max_attempts: 3, backoff: exponential, base_ms: 60000, max_ms: 60000 }
";

const SINGLE: &str = "namespace: engine_test
name: single
version: '1'
steps:
  - name: only
    handler: h
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
            .create_task(NewTask {
                template_id,
                template: loaded,
                context: json!({}),
                idempotency_key: None,
            })
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
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM transitions
             WHERE task_id = $1 AND step_id IS NOT DISTINCT FROM $2 AND to_state = $3",
        )
        .bind(task)
        .bind(step)
        .bind(to)
        .fetch_one(self.store.pool())
        .await?)
    }

    async fn apply(&self, task: Uuid, step: Uuid, outcome: Outcome) -> anyhow::Result<()> {
        let now = Utc::now();
        self.store
            .apply_results(&[StepResult {
                task_id: task,
                step_id: step,
                attempt: 1,
                outcome,
                started_at: now,
                finished_at: now,
                worker: "engine-test".into(),
                traceparent: None,
            }])
            .await?;
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

fn failure(retryable: bool) -> Outcome {
    Outcome::failure(StepError::new("test", "failed on purpose"), retryable)
}

fn success() -> Outcome {
    Outcome::Success {
        result: json!({"ok": true}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_state_and_event_pair_matches_the_table() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let pair = TaskTemplate::load(PAIR, "pair.yaml")?;
    let mut checked = 0;
    for from in StepState::ALL {
        for event in StepEvent::ALL {
            let task = engine.create(&pair).await?;
            let b = engine.step_id(task, "b").await?;
            // Put `b` (a child of the root `a`, three attempts) in the state under test.
            sqlx::query(
                "UPDATE steps SET state = $2,
                        attempt = CASE WHEN $2 = 'pending' THEN 0 ELSE 1 END,
                        dispatched_at = clock_timestamp(),
                        next_attempt_at = CASE WHEN $2 = 'waiting_retry'
                                               THEN clock_timestamp() + interval '1 hour' END
                 WHERE id = $1",
            )
            .bind(b)
            .bind(from.as_str())
            .execute(engine.store.pool())
            .await?;
            if matches!(event, StepEvent::Repair | StepEvent::Resolve) {
                // Only a task in error is repaired.
                engine
                    .exec(
                        "UPDATE tasks SET state = 'error', completed_at = clock_timestamp() WHERE id = $1",
                        task,
                    )
                    .await?;
            }
            match event {
                StepEvent::Dispatch => engine.exec("SELECT tasker_dispatch(ARRAY[$1])", b).await?,
                StepEvent::Succeed => engine.apply(task, b, success()).await?,
                StepEvent::FailRetryable => engine.apply(task, b, failure(true)).await?,
                StepEvent::FailPermanent => engine.apply(task, b, failure(false)).await?,
                StepEvent::Skip => engine.exec("SELECT tasker_skip(ARRAY[$1])", b).await?,
                StepEvent::Cancel => engine.cancel(task).await?,
                StepEvent::Repair => engine.repair(task, None, None).await?,
                StepEvent::Resolve => {
                    engine
                        .repair(task, Some(b), Some(json!({"ok": true})))
                        .await?
                }
            }
            let want = from.on(event).unwrap_or(from);
            // A repair dispatches what it made runnable: a retried step's next attempt at once.
            let now = match (event, from.on(event)) {
                (StepEvent::Repair, Some(StepState::WaitingRetry)) => StepState::Enqueued,
                _ => want,
            };
            let got = engine.step_state(b).await?;
            assert_eq!(got, now, "step {from} + {event:?}");
            let recorded = engine.transitions(task, Some(b), want.as_str()).await?;
            let changed = from.on(event).is_some();
            assert_eq!(
                recorded,
                i64::from(changed),
                "step {from} + {event:?}: transitions recorded into {want}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, StepState::ALL.len() * StepEvent::ALL.len());
    engine.store.pool().close().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_state_and_event_pair_matches_the_table() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    for from in TaskState::ALL {
        for event in TaskEvent::ALL {
            let task = engine.create(&single).await?;
            let only = engine.step_id(task, "only").await?;
            sqlx::query(
                "UPDATE tasks SET state = $2,
                        completed_at = CASE WHEN $2 <> 'running' THEN clock_timestamp() END
                 WHERE id = $1",
            )
            .bind(task)
            .bind(from.as_str())
            .execute(engine.store.pool())
            .await?;
            match event {
                TaskEvent::Finish => engine.apply(task, only, success()).await?,
                TaskEvent::Fail => engine.apply(task, only, failure(false)).await?,
                TaskEvent::Cancel => engine.cancel(task).await?,
                TaskEvent::Repair => engine.repair(task, None, None).await?,
            }
            let want = from.on(event).unwrap_or(from);
            assert_eq!(
                engine.task_state(task).await?,
                want,
                "task {from} + {event:?}"
            );
            let recorded = engine.transitions(task, None, want.as_str()).await?;
            let expected = match (from.on(event), from) {
                // Back to running: once at creation, once now.
                (Some(TaskState::Running), _) => 2,
                (Some(_), _) => 1,
                // `created` is recorded into running at creation.
                (None, TaskState::Running) => 1,
                (None, _) => 0,
            };
            assert_eq!(
                recorded, expected,
                "task {from} + {event:?}: transitions into {want}"
            );
        }
    }
    engine.store.pool().close().await;
    env.cleanup().await
}

/// The quoted names in a CHECK constraint's definition.
async fn allowed(store: &Store, constraint: &str) -> anyhow::Result<BTreeSet<String>> {
    let def: String = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1",
    )
    .bind(constraint)
    .fetch_one(store.pool())
    .await?;
    Ok(def
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect())
}

fn names<T>(all: &[T], name: impl Fn(&T) -> &'static str) -> BTreeSet<String> {
    all.iter().map(|v| name(v).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_allows_exactly_the_rust_vocabulary() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let mut every_state = names(&TaskState::ALL, |s| s.as_str());
    every_state.extend(names(&StepState::ALL, |s| s.as_str()));
    let expected = [
        ("tasks_state_check", names(&TaskState::ALL, |s| s.as_str())),
        ("steps_state_check", names(&StepState::ALL, |s| s.as_str())),
        (
            "steps_step_type_check",
            names(&StepType::ALL, |s| s.as_str()),
        ),
        ("steps_backoff_check", names(&Backoff::ALL, |s| s.as_str())),
        (
            "steps_on_failure_check",
            names(&FailurePolicy::ALL, |s| s.as_str()),
        ),
        ("transitions_states_check", every_state),
    ];
    for (constraint, rust) in expected {
        assert_eq!(allowed(&store, constraint).await?, rust, "{constraint}");
    }

    // And the database enforces it: a name outside the vocabulary is refused.
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    let engine = Engine { store };
    let task = engine.create(&single).await?;
    let err = sqlx::query("UPDATE tasks SET state = 'done' WHERE id = $1")
        .bind(task)
        .execute(engine.store.pool())
        .await
        .expect_err("an unknown task state must be refused");
    let code = err.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("23514"), "{err}");
    engine.store.pool().close().await;
    env.cleanup().await
}
