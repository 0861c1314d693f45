//! Task creations that arrive together share a statement (`tasker_orchestration::creates`):
//! each request still gets its own answer, a repeated idempotency key its first task, and a
//! task PostgreSQL refuses fails alone, the others created.

use std::collections::HashMap;

use anyhow::Context;
use serde_json::json;
use uuid::Uuid;

use tasker::TestEnv;

/// Whether request `i` names a template that does not exist (its foreign key fails).
fn refused(i: usize) -> bool {
    i % 8 == 7
}

/// Request `i`'s idempotency key: every third of the others shares one with three more.
fn key(i: usize) -> Option<String> {
    (i.is_multiple_of(3) && !refused(i)).then(|| format!("k{}", i % 12))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_that_arrive_together_share_statements_and_fail_alone() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let shared = o.shared.clone();
    let entry = shared
        .catalog
        .get("rust_examples", "linear", None)
        .await?
        .context("rust_examples/linear is registered")?;
    let creates = tasker_orchestration::creates::Creates::default();
    let before = statements_and_tasks();
    let n = 160;
    let answers = futures_util::future::join_all((0..n).map(|i| {
        let (shared, entry, creates) = (shared.clone(), entry.clone(), creates.clone());
        async move {
            let template_id = if refused(i) { Uuid::now_v7() } else { entry.id };
            let new = tasker::new_task(template_id, &entry.loaded, json!({ "value": i }), key(i));
            creates.create(&shared, new, 16).await
        }
    }))
    .await;

    let mut by_key: HashMap<String, Vec<(Uuid, bool)>> = HashMap::new();
    let mut created = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        match (refused(i), answer) {
            (true, Err(e)) => assert!(!e.is_transient(), "request {i}: {e}"),
            (true, Ok(c)) => panic!("request {i} named no template yet created {}", c.task_id),
            (false, Err(e)) => panic!("request {i} failed for another's sake: {e}"),
            (false, Ok(c)) => {
                assert!(
                    c.effects.dispatch.is_empty(),
                    "its root steps were published"
                );
                match key(i) {
                    Some(k) => by_key.entry(k).or_default().push((c.task_id, c.created)),
                    None => {
                        assert!(c.created, "request {i} without a key created nothing");
                        created.push(c.task_id);
                    }
                }
            }
        }
    }
    for (k, answers) in &by_key {
        assert_eq!(
            answers.iter().filter(|(_, made)| *made).count(),
            1,
            "key {k}: {answers:?}"
        );
        assert!(
            answers.iter().all(|(id, _)| *id == answers[0].0),
            "key {k}: {answers:?}"
        );
        created.push(answers[0].0);
    }
    let stored: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM tasks ORDER BY id")
        .fetch_all(shared.store.pool())
        .await?;
    created.sort();
    assert_eq!(stored, created, "exactly the tasks answered were stored");
    // Each with its first step enqueued (linear: one root).
    let roots: i64 = sqlx::query_scalar("SELECT count(*) FROM steps WHERE state = 'enqueued'")
        .fetch_one(shared.store.pool())
        .await?;
    assert_eq!(roots as usize, created.len());
    // Some statement carried more than one task (the recorder is the process's: only ever more).
    let after = statements_and_tasks();
    assert!(
        after.1 - before.1 > after.0 - before.0,
        "{n} requests at once never shared a statement: {before:?} -> {after:?}"
    );
    o.stop().await;
    env.cleanup().await
}

/// `tasker_create_batch_size`'s count and sum in the process's Prometheus recorder.
fn statements_and_tasks() -> (f64, f64) {
    let text = tasker_orchestration::metrics::handle().render();
    let read = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        read("tasker_create_batch_size_count"),
        read("tasker_create_batch_size_sum"),
    )
}
