//! The vocabulary the schema accepts (the CHECK constraints of its domains) against the Rust
//! vocabulary, and the database refusing a name outside it.

use std::collections::BTreeSet;

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::{Backoff, FailurePolicy, StepState, StepType, TaskState, TaskTemplate};

use super::{Engine, SINGLE};

/// The quoted names in a CHECK constraint's definition (the vocabulary's are on domains,
/// migration 0012).
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
        (
            "tasker_task_state_names",
            names(&TaskState::ALL, |s| s.as_str()),
        ),
        (
            "tasker_step_state_names",
            names(&StepState::ALL, |s| s.as_str()),
        ),
        (
            "tasker_step_type_names",
            names(&StepType::ALL, |s| s.as_str()),
        ),
        ("tasker_backoff_names", names(&Backoff::ALL, |s| s.as_str())),
        (
            "tasker_failure_policy_names",
            names(&FailurePolicy::ALL, |s| s.as_str()),
        ),
        ("tasker_state_names", every_state),
    ];
    for (constraint, rust) in expected {
        assert_eq!(allowed(&store, constraint).await?, rust, "{constraint}");
    }

    // And the database enforces it: a name outside the vocabulary is refused.
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    let engine = Engine { store };
    let task = engine.create(&single).await?;
    for refused in [
        "UPDATE tasks SET state = 'done' WHERE id = $1",
        "UPDATE steps SET state = 'done' WHERE task_id = $1",
        "UPDATE steps SET step_type = 'odd' WHERE task_id = $1",
        "INSERT INTO transitions (task_id, to_state, reason) VALUES ($1, 'done', 'test')",
    ] {
        let err = sqlx::query(refused)
            .bind(task)
            .execute(engine.store.pool())
            .await
            .expect_err(refused);
        let code = err.as_database_error().and_then(|e| e.code());
        assert_eq!(code.as_deref(), Some("23514"), "{refused}: {err}");
    }
    engine.store.pool().close().await;
    env.cleanup().await
}
