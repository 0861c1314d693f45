//! The dashboard's operations by filter (`tests/dashboard/operations.mjs`): every failed task
//! of a template retried from the task list (its counts by state, the error count's link), the
//! count shown before, the operation followed to its end, and each task complete with the
//! operation in its history — for five tasks, and for 5,000.

use std::time::Duration;

use serde_json::{Value, json};
use tasker::RunningOrchestrator;
use tasker_client::{CreateTask, TaskQuery};
use uuid::Uuid;

use super::{clean_tour, with_write_token};

/// A step that fails its only attempt until the task is retried (`flaky` succeeds on attempt 2).
const FAILS_ONCE: &str = "namespace: rust_examples\nname: fails_once\nversion: 1.0.0\n\
    steps:\n  - name: flaky\n    handler: flaky\n    retry: { max_attempts: 1 }\n";

/// Creates `n` tasks of `name` with `context`, 5,000 a request; their ids.
async fn create(
    o: &RunningOrchestrator,
    name: &str,
    n: usize,
    context: Value,
) -> anyhow::Result<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(n);
    let all: Vec<CreateTask> = (0..n)
        .map(|_| CreateTask::new("rust_examples", name).context(context.clone()))
        .collect();
    for chunk in all.chunks(5_000) {
        let created = o.client.create_tasks(chunk).await?;
        ids.extend(created.results.iter().filter_map(|r| r.task_id));
    }
    assert_eq!(ids.len(), n);
    Ok(ids)
}

/// Waits until the `n` tasks of template `name` are all in `state`.
async fn all_in(o: &RunningOrchestrator, name: &str, state: &str, n: u64) -> anyhow::Result<()> {
    let query = TaskQuery {
        name: Some(name.into()),
        ..TaskQuery::default()
    };
    let what = format!("{n} tasks of {name} {state}");
    let waited = o
        .until(Duration::from_secs(180), &what, || async {
            let counts = o.client.task_counts(&query).await?;
            let now = match state {
                "error" => counts.error,
                _ => counts.complete,
            };
            Ok((now == n).then_some(()))
        })
        .await;
    if waited.is_err() {
        eprintln!("{name}: {:?}", o.client.task_counts(&query).await?);
    }
    waited
}

/// Retries every failed task of template `name` (`n` of them) from the task list in a browser;
/// the report, once every task is complete and names the operation in its history.
async fn retry_from_the_list(
    o: &RunningOrchestrator,
    token: String,
    name: &str,
    n: u64,
) -> anyhow::Result<Value> {
    let report = clean_tour(
        "operations.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("TASKER_TOKEN", token),
            ("NAME", name.into()),
        ],
    )
    .await?;
    let counts = json!({"scheduled": 0, "running": 0, "complete": 0, "error": n, "cancelled": 0});
    assert_eq!(report["counts"], counts, "{report}");
    assert_eq!(
        report["address"],
        format!("#/tasks?state=error&name={name}"),
        "{report}"
    );
    let rows = n.min(50);
    let new_tab = json!({"state": "error", "name": name, "rows": rows, "current": "error"});
    assert_eq!(report["newTab"], new_tab, "{report}");
    assert_eq!(report["matched"], n, "{report}");
    assert_eq!(
        (&report["acted"], &report["skipped"]),
        (&json!(n), &json!(0)),
        "{report}"
    );
    assert_eq!(report["progress"], json!([n, n]), "{report}");
    assert_eq!(report["listed"], true, "{report}");
    all_in(o, name, "complete", n).await?;
    // Every task's history names the operation and the reason typed in the page.
    let op = report["operationId"].as_str().unwrap_or_default();
    let named: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT t.id) FROM tasks t JOIN transitions h ON h.task_id = t.id
         WHERE t.name = $1 AND h.reason LIKE '%' || $2 || '%' AND h.reason LIKE '%upstream fixed (browser)%'",
    )
    .bind(name)
    .bind(op)
    .fetch_one(o.shared.store.pool())
    .await?;
    assert_eq!(named, n as i64, "tasks whose history names operation {op}");
    Ok(report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_list_retries_every_failed_task_of_its_filter() -> anyhow::Result<()> {
    let (env, token) = with_write_token("dashboard-ops").await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let context = json!({"value": 1, "succeed_on_attempt": 3});
    let ids = create(&o, "repairable", 5, context).await?;
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
    let report = retry_from_the_list(&o, token, "repairable", 5).await?;
    assert_eq!(report["hintWithoutState"], true, "{report}");
    assert_eq!(report["cancelOffered"], false, "{report}");
    assert_eq!(report["okLabel"], "Retry 5 tasks", "{report}");
    assert_eq!(report["cancelShownWhenDone"], false, "{report}");
    assert_eq!(o.client.task(other.id, None).await?.state, other.state);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// The scale: 5,000 failed tasks filtered, counted, retried from the page, the
/// operation's progress seen on its way, every task complete with the operation in its history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_failed_tasks_are_retried_from_the_task_list() -> anyhow::Result<()> {
    const N: u64 = 5_000;
    let (env, token) = with_write_token("dashboard-ops-scale").await?;
    let o = env.orchestrator().await?;
    o.client.register_template(FAILS_ONCE, None, None).await?;
    let worker = env.rust_worker();
    create(
        &o,
        "fails_once",
        N as usize,
        json!({"succeed_on_attempt": 2}),
    )
    .await?;
    all_in(&o, "fails_once", "error", N).await?;
    let report = retry_from_the_list(&o, token, "fails_once", N).await?;
    let seen: Vec<u64> = serde_json::from_value(report["progressSeen"].clone())?;
    assert!(
        seen.iter().any(|v| (1..N).contains(v)),
        "the progress bar showed the operation on its way: {seen:?}"
    );
    println!("{N} tasks: progress seen at {seen:?}");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
