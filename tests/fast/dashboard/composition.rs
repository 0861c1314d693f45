//! Children, parents and workers (`tests/dashboard/composition.mjs`): a parent lists its child,
//! the child links back to its parent and step, the Workers page lists a live worker.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_parents_and_workers_in_a_real_browser() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        tasker::templates("rust"),
        repo_root().join("tests/fixtures/task_templates/composition"),
    ];
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The in-process worker runs no registry report of its own (the worker binaries and
    // bindings do, tests/slow/conformance.rs): report it as they would.
    o.client
        .report_worker(
            uuid::Uuid::now_v7(),
            &tasker::worker_report("dashboard-test-worker", &["add_ten", "double", "sleep"]),
        )
        .await?;
    let parent = o
        .run_task(
            "rust_examples",
            "family",
            json!({"value": 1, "sleep_ms": 0}),
        )
        .await?;
    assert_eq!(parent.state, "complete", "{parent:?}");
    let child = o.client.task(parent.id, None).await?.children.unwrap()[0].task_id;

    let shots = screenshots();
    let report = clean_tour(
        "composition.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("PARENT_TASK_ID", parent.id.to_string()),
            ("CHILD_TASK_ID", child.to_string()),
            ("CHILD_STEP", "kid".to_owned()),
            ("WORKER_NAMESPACE", "rust_examples".to_owned()),
        ],
    )
    .await?;
    assert_eq!(report["childTaskId"], child.to_string(), "{report}");
    assert_eq!(report["childStep"]["dagKind"], "child", "{report}");
    assert!(
        report["childStep"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("rust_examples/family_child@1.0.0")),
        "{report}"
    );
    assert_eq!(report["parent"]["step"], "kid", "{report}");
    assert!(
        report["workers"].as_array().is_some_and(|w| w
            .iter()
            .any(|w| w["name"] == "dashboard-test-worker" && w["live"] == true)),
        "{report}"
    );
    assert_screenshots(&shots, &["c1-parent", "c2-child", "c3-workers"]);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
