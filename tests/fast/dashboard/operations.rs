//! The dashboard's operations by filter (`tests/dashboard/operations.mjs`): every failed task
//! of a template retried from the task list (its counts by state, the error count's link), the
//! count shown before, the operation followed to
//! its end, and each task complete with the operation in its history.

use serde_json::json;
use tasker::target_dir;
use tasker_client::CreateTask;

use super::{assert_clean, browser_script, run_browser, with_write_token};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_list_retries_every_failed_task_of_its_filter() -> anyhow::Result<()> {
    let (script, chromium) = browser_script("operations.mjs")?;
    let (env, token) = with_write_token("dashboard-ops").await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let tasks: Vec<CreateTask> = (0..5)
        .map(|i| {
            CreateTask::new("rust_examples", "repairable")
                .context(json!({"value": i, "succeed_on_attempt": 3}))
        })
        .collect();
    let ids: Vec<_> = o
        .client
        .create_tasks(&tasks)
        .await?
        .results
        .iter()
        .filter_map(|r| r.task_id)
        .collect();
    for id in &ids {
        assert_eq!(o.wait(*id).await?.state, "error");
    }
    // A task of another template beside them, failed too: outside the filter.
    let other = o
        .run_task(
            "rust_examples",
            "retry_then_succeed",
            json!({"succeed_on_attempt": 9}),
        )
        .await?;

    let shots = target_dir().join("dashboard-screenshots");
    let (report, stderr) = run_browser(
        &script,
        &chromium,
        &shots,
        &[
            ("TASKER_URL", o.url()),
            ("TASKER_TOKEN", token),
            ("NAME", "repairable".into()),
        ],
    )
    .await?;
    assert_clean(&report, &stderr, &shots, true);
    assert_eq!(report["hintWithoutState"], true, "{report}");
    assert_eq!(
        report["counts"],
        json!({"scheduled": 0, "running": 0, "complete": 0, "error": 5, "cancelled": 0}),
        "{report}"
    );
    assert_eq!(
        report["address"], "#/tasks?state=error&name=repairable",
        "{report}"
    );
    assert_eq!(
        report["newTab"],
        json!({"state": "error", "name": "repairable", "rows": 5, "current": "error"}),
        "{report}"
    );
    assert_eq!(report["cancelOffered"], false, "{report}");
    assert_eq!(report["matched"], 5, "{report}");
    assert_eq!(report["okLabel"], "Retry 5 tasks", "{report}");
    assert_eq!(
        (&report["acted"], &report["skipped"]),
        (&json!(5), &json!(0)),
        "{report}"
    );
    assert_eq!(report["progress"], json!([5, 5]), "{report}");
    assert_eq!(report["cancelShownWhenDone"], false, "{report}");
    assert_eq!(report["listed"], true, "{report}");
    let op = report["operationId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for id in &ids {
        assert_eq!(o.wait(*id).await?.state, "complete", "{id}");
        let history = o.client.history(*id).await?;
        assert!(
            history.iter().any(|t| t
                .reason
                .as_deref()
                .is_some_and(|r| r.contains(&op) && r.contains("upstream fixed (browser)"))),
            "{history:?}"
        );
    }
    assert_eq!(o.client.task(other.id, None).await?.state, other.state);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
