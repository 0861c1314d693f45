//! Child workflows through a real orchestrator, PostgreSQL and RabbitMQ, with the Rust fixture
//! worker: a parent → child → grandchild chain and the links between them, a cancel that ends
//! the whole tree in one transaction, an abandoned child that runs on, the depth bound, bad
//! children refused by name, and exactly one child per step attempt when the start is repeated
//! after a crash (before or after its commit). Waits are on the orchestrator's events, each
//! bounded by a timeout.

use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv, repo_root, steps_by_name, templates};
use tasker_client::{CreateTask, Error, Task};

#[path = "composition/running.rs"]
mod running;

/// An environment whose orchestrator knows the Rust fixtures and the composition templates.
async fn env() -> anyhow::Result<TestEnv> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        templates("rust"),
        repo_root().join("tests/fixtures/task_templates/composition"),
    ];
    // A cancelled nap need not hold the worker's stop.
    env.config.worker.shutdown_timeout_ms = 200;
    Ok(env)
}

/// The task a task's child step started (its newest child there).
async fn child_of(o: &RunningOrchestrator, parent: Uuid) -> anyhow::Result<Option<Task>> {
    let task = o.client.task(parent, None).await?;
    Ok(match task.children.unwrap_or_default().last() {
        Some(c) => Some(o.client.task(c.task_id, None).await?),
        None => None,
    })
}

async fn wait_child(o: &RunningOrchestrator, parent: Uuid) -> anyhow::Result<Task> {
    o.until(Duration::from_secs(20), "a child task", || {
        child_of(o, parent)
    })
    .await
}

fn error_kind(step: &tasker_client::Step) -> &str {
    step.error
        .as_ref()
        .and_then(|e| e["kind"].as_str())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_child_and_grandchild_complete_linked_both_ways() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let parent = o
        .run_task(
            "rust_examples",
            "family",
            json!({"value": 1, "sleep_ms": 0}),
        )
        .await?;
    assert_eq!(parent.state, "complete", "{parent:?}");
    assert_eq!(parent.depth, 0);
    let child = child_of(&o, parent.id).await?.expect("a child");
    let grandchild = child_of(&o, child.id).await?.expect("a grandchild");
    assert_eq!(grandchild.result.as_ref().unwrap()["double"]["value"], 44);
    // Each child step's result is its child's result, all the way up.
    let parent_steps = steps_by_name(&o.client, parent.id).await?;
    let child_steps = steps_by_name(&o.client, child.id).await?;
    assert_eq!(child_steps["grand"].result, grandchild.result);
    assert_eq!(parent_steps["kid"].result, child.result);
    assert_eq!(parent.result, Some(json!({ "kid": child.result })));
    // Links both ways: the child names its parent, the parent lists its child.
    assert_eq!(child.parent_task_id, Some(parent.id));
    assert_eq!(child.parent_step_id, Some(parent_steps["kid"].id));
    assert_eq!((child.depth, grandchild.depth), (1, 2));
    assert_eq!(grandchild.parent_task_id, Some(child.id));
    let links = o.client.task(parent.id, None).await?.children.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(
        (
            links[0].task_id,
            links[0].step_name.as_str(),
            links[0].attempt,
            links[0].state.as_str()
        ),
        (child.id, "kid", 1, "complete")
    );
    assert_eq!(
        format!(
            "{}/{}@{}",
            links[0].namespace, links[0].name, links[0].version
        ),
        "rust_examples/family_child@1.0.0"
    );
    let listed = o
        .client
        .tasks(&tasker_client::TaskQuery {
            parent: Some(child.id),
            ..Default::default()
        })
        .await?;
    assert_eq!(
        listed.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![grandchild.id]
    );
    let kid = &parent_steps["kid"];
    assert_eq!(kid.step_type, "child");
    assert_eq!(
        (kid.attempt, kid.max_attempts),
        (1, 1),
        "a child step has one attempt"
    );
    assert_eq!(kid.child.as_ref().unwrap()["task_id"], json!(child.id));
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_ends_the_whole_tree_in_one_transaction() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let parent = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "family")
                .context(json!({"value": 1, "sleep_ms": 20000})),
        )
        .await?;
    let child = wait_child(&o, parent.id).await?;
    let grandchild = wait_child(&o, child.id).await?;
    // The grandchild's nap runs on the worker.
    o.until(Duration::from_secs(20), "the nap running", || async {
        let steps = steps_by_name(&o.client, grandchild.id).await?;
        Ok(matches!(steps["nap"].state.as_str(), "enqueued" | "running").then_some(()))
    })
    .await?;
    let cancelled = o.client.cancel(parent.id).await?;
    assert_eq!(cancelled.state, "cancelled");
    // One transaction: by the time the cancel answered, all three have ended.
    for id in [parent.id, child.id, grandchild.id] {
        let t = o.client.task(id, None).await?;
        assert_eq!(t.state, "cancelled", "{id}");
    }
    // Nothing of the tree was dispatched after the cancel committed.
    let late: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM transitions x
         WHERE x.task_id = ANY($1) AND x.to_state = 'enqueued'
           AND x.at > (SELECT at FROM transitions
                               WHERE task_id = $2 AND step_id IS NULL AND to_state = 'cancelled')",
    )
    .bind(vec![parent.id, child.id, grandchild.id])
    .bind(parent.id)
    .fetch_one(o.shared.store.pool())
    .await?;
    assert_eq!(late, 0, "steps dispatched after the cancel");
    let history = o.client.history(grandchild.id).await?;
    assert!(
        history.iter().any(|h| h.step.is_none()
            && h.to == "cancelled"
            && h.reason.as_deref().unwrap_or("").contains("parent task")),
        "{history:?}"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_child_runs_on_after_its_parent_is_cancelled() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let parent = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "runaway")
                .context(json!({"value": 3, "sleep_ms": 300})),
        )
        .await?;
    let child = wait_child(&o, parent.id).await?;
    assert_eq!(o.client.cancel(parent.id).await?.state, "cancelled");
    let child = o.wait(child.id).await?;
    assert_eq!(child.state, "complete", "{child:?}");
    assert_eq!(child.result.unwrap()["double"]["value"], 6);
    // Its end did not touch the cancelled parent's step.
    let steps = steps_by_name(&o.client, parent.id).await?;
    assert_eq!(steps["loose"].state, "cancelled");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_starts_itself_stops_at_the_depth_bound() -> anyhow::Result<()> {
    let mut env = env().await?;
    env.config.orchestrator.max_child_depth = 3;
    let o = env.orchestrator().await?;
    let top = o.run_task("rust_examples", "ouroboros", json!({})).await?;
    assert_eq!(top.state, "error", "{top:?}");
    // Depths 0 to 3, each started by the one above; the deepest could not start a fourth.
    let mut task = top;
    for depth in 1..=3 {
        let steps = steps_by_name(&o.client, task.id).await?;
        assert_eq!(
            error_kind(&steps["again"]),
            "child_failed",
            "depth {}",
            depth - 1
        );
        task = child_of(&o, task.id).await?.expect("a child");
        assert_eq!((task.depth, task.state.as_str()), (depth, "error"));
    }
    assert!(child_of(&o, task.id).await?.is_none());
    let deepest = steps_by_name(&o.client, task.id).await?;
    assert_eq!(error_kind(&deepest["again"]), "child_depth_exceeded");
    let message = deepest["again"].error.as_ref().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("max_child_depth is 3"), "{message}");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_children_are_refused_or_fail_by_name() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // A child template that is not registered: the task is not created.
    match o
        .client
        .create_task(&CreateTask::new("rust_examples", "orphan"))
        .await
    {
        Err(Error::Api {
            status: 422,
            code,
            message,
        }) => {
            assert_eq!(code, "unknown_child_template");
            assert!(message.contains("no_such_template"), "{message}");
        }
        other => panic!("expected 422 unknown_child_template, got {other:?}"),
    }
    // A pointer that reads nothing fails that step alone, naming the pointer.
    let lost = o
        .run_task("rust_examples", "lost_child", json!({"sleep_ms": 0}))
        .await?;
    assert_eq!(lost.state, "error");
    let step = &steps_by_name(&o.client, lost.id).await?["find"];
    assert_eq!(error_kind(step), "child_context_missing");
    assert!(
        step.error.as_ref().unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("/context/missing")
    );
    // A child context its template's schema refuses.
    let invalid = o
        .run_task(
            "rust_examples",
            "runaway",
            json!({"value": "x", "sleep_ms": 0}),
        )
        .await?;
    let step = &steps_by_name(&o.client, invalid.id).await?["loose"];
    assert_eq!(error_kind(step), "child_context_invalid", "{step:?}");
    assert!(child_of(&o, invalid.id).await?.is_none());
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_fails_its_step_with_its_id_and_a_retry_starts_a_new_one()
-> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let parent = o.run_task("rust_examples", "doomed", json!({})).await?;
    assert_eq!(parent.state, "error");
    let first = child_of(&o, parent.id).await?.expect("a child");
    assert_eq!(first.state, "error");
    let step = &steps_by_name(&o.client, parent.id).await?["attempt"];
    assert_eq!(error_kind(step), "child_failed");
    assert_eq!(
        step.error.as_ref().unwrap()["child_task_id"],
        json!(first.id)
    );
    o.client
        .retry(parent.id, &tasker_client::RepairNote::default())
        .await?;
    let parent = o.wait(parent.id).await?;
    assert_eq!(parent.state, "error");
    let links = o.client.task(parent.id, None).await?.children.unwrap();
    assert_eq!(
        links.iter().map(|c| c.attempt).collect::<Vec<_>>(),
        vec![1, 2],
        "one child per attempt"
    );
    assert_ne!(links[0].task_id, links[1].task_id);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// The crash points of a child's start, replayed in process: the orchestrator that dispatched
/// the child step stopped before starting the child (its effects are dropped), and — once the
/// sweeper started it — the step is handed to the executor again as after a crash past the
/// commit, and its start is repeated with the same key. One child either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_repeated_before_or_after_its_commit_makes_one_child() -> anyhow::Result<()> {
    let mut env = env().await?;
    env.config.orchestrator.visibility_timeout_ms = 500;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let shared = &o.shared;
    let entry = shared
        .catalog
        .get("rust_examples", "runaway", None)
        .await?
        .expect("runaway");
    let children = shared.catalog.pin_children(&entry.loaded).await?;
    // Crash before the child's commit: the dispatch committed, nothing else happened.
    let created = shared
        .store
        .create_task(tasker_orchestration::store::NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            context: json!({"value": 5, "sleep_ms": 0}),
            idempotency_key: None,
            run_at: None,
            children,
            parent: None,
            priority: Default::default(),
            token_id: None,
            controls: Default::default(),
            deadline: None,
        })
        .await?;
    drop(created.effects);
    let parent = created.task_id;
    let step = steps_by_name(&o.client, parent).await?["loose"].clone();
    assert!(step.child.as_ref().unwrap()["task_id"].is_null());
    // Dispatched by an orchestrator that is gone (this one is alive, and a live orchestrator
    // publishes what it dispatched).
    sqlx::query("UPDATE steps SET dispatched_by = $2 WHERE id = $1")
        .bind(step.id)
        .bind(Uuid::now_v7())
        .execute(shared.store.pool())
        .await?;
    // The sweeper publishes the step again past the visibility timeout: the child starts.
    let parent_task = o.wait(parent).await?;
    assert_eq!(parent_task.state, "complete", "{parent_task:?}");
    // After the commit: the step handed to the executor again, and the start itself repeated.
    tasker_orchestration::executor::execute(
        shared,
        tasker_orchestration::effects::Effects {
            children: vec![tasker_orchestration::effects::ChildStep {
                step_id: step.id,
                attempt: 1,
            }],
            ..Default::default()
        },
    )
    .await;
    let again = shared
        .store
        .create_task(tasker_orchestration::store::NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            context: json!({"value": 5, "sleep_ms": 0}),
            idempotency_key: Some(format!("child:{}:1", step.id)),
            run_at: None,
            children: vec![None],
            parent: None,
            priority: Default::default(),
            token_id: None,
            controls: Default::default(),
            deadline: None,
        })
        .await?;
    assert!(!again.created);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE parent_task_id = $1")
        .bind(parent)
        .fetch_one(shared.store.pool())
        .await?;
    assert_eq!(count, 1, "one child for the one attempt");
    let child = child_of(&o, parent).await?.unwrap();
    assert_eq!(again.task_id, child.id);
    assert_eq!(
        parent_task.result,
        Some(json!({ "loose": child.result.clone().unwrap_or(Value::Null) }))
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// The workers registry refuses a bad report by name and keeps what it had; a worker that
/// leaves is no longer live (still listed with `?all`) until it reports again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_registry_refuses_bad_reports_and_keeps_its_rows() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let id = Uuid::now_v7();
    let report = |name: &str| tasker::worker_report(name, &["double"]);
    let info = o.client.report_worker(id, &report("w1")).await?;
    assert!(info.live);
    let put = |body: String| {
        let url = format!("{}/v1/workers/{id}", o.url());
        async move {
            let resp = reqwest::Client::new()
                .put(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            let status = resp.status().as_u16();
            anyhow::Ok((status, resp.json::<Value>().await?))
        }
    };
    let mut bad = serde_json::to_value(report("w\u{7}bell"))?;
    let (status, body) = put(bad.to_string()).await?;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_worker")),
        "{body}"
    );
    bad = serde_json::to_value(report("w1"))?;
    bad["heartbeat_ms"] = json!(0);
    let (status, body) = put(bad.to_string()).await?;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_worker")),
        "{body}"
    );
    bad["surprise"] = json!(true);
    let (status, body) = put(bad.to_string()).await?;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_json")),
        "{body}"
    );
    let (status, body) = put("{".into()).await?;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_json")),
        "{body}"
    );
    // None of those changed the row.
    let listed = o.client.workers(false).await?;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].name.as_str(), listed[0].heartbeat_ms),
        ("w1", 60_000)
    );
    // Leaving: no longer live, listed with ?all; a second leave of an unknown id is a 404.
    o.client.leave_worker(id).await?;
    assert!(o.client.workers(false).await?.is_empty());
    let all = o.client.workers(true).await?;
    assert_eq!((all.len(), all[0].live), (1, false));
    match o.client.leave_worker(Uuid::now_v7()).await {
        Err(Error::Api {
            status: 404, code, ..
        }) => assert_eq!(code, "worker_not_found"),
        other => panic!("expected 404 worker_not_found, got {other:?}"),
    }
    // Reporting again brings it back.
    assert!(o.client.report_worker(id, &report("w1")).await?.live);
    o.stop().await;
    env.cleanup().await
}
