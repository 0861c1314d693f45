//! Operations by filter: every failed task of a filter retried once, with the operation named in
//! its history; a dry run's exact count; the tasks outside the filter untouched; an operation
//! whose orchestrator is killed goes on elsewhere and still acts on each task once.

use std::time::Duration;

use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{CreateTask, OperationFilter, StartOperation, TaskQuery};
use uuid::Uuid;

/// `n` tasks of `repairable` that end in error (their retry then completes them), with
/// `marker` in their context; their ids, once all have failed.
async fn failed(o: &RunningOrchestrator, n: usize, marker: &str) -> anyhow::Result<Vec<Uuid>> {
    let tasks: Vec<CreateTask> = (0..n)
        .map(|i| {
            CreateTask::new("rust_examples", "repairable")
                .context(json!({"value": i, "succeed_on_attempt": 3, "marker": marker}))
        })
        .collect();
    let created = o.client.create_tasks(&tasks).await?;
    let ids: Vec<Uuid> = created.results.iter().filter_map(|r| r.task_id).collect();
    anyhow::ensure!(ids.len() == n, "not all created: {created:?}");
    for id in &ids {
        let task = o.wait(*id).await?;
        anyhow::ensure!(task.state == "error", "{id} did not fail: {task:?}");
    }
    Ok(ids)
}

fn retry(marker: &str, reason: &str) -> StartOperation {
    StartOperation {
        action: "retry".into(),
        filter: OperationFilter {
            name: Some("repairable".into()),
            context: Some(json!({"marker": marker})),
            ..OperationFilter::default()
        },
        reason: Some(reason.into()),
        by: Some("user:oncall".into()),
        result: None,
        dry_run: false,
    }
}

/// How many of task `id`'s transitions name operation `op`, at the task's level.
async fn named(o: &RunningOrchestrator, id: Uuid, op: Uuid) -> anyhow::Result<usize> {
    let history = o.client.history(id).await?;
    Ok(history
        .iter()
        .filter(|t| {
            t.step.is_none()
                && t.reason
                    .as_deref()
                    .is_some_and(|r| r.contains(&format!("operation {op}")))
        })
        .count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_retries_every_failed_task_its_filter_matches_once() -> anyhow::Result<()> {
    let cluster = tasker::Cluster::start().await?;
    let o = &cluster.orchestrator;
    let mine = failed(o, 12, "mine").await?;
    let others = failed(o, 3, "others").await?;

    let count = o.client.count_operation(&retry("mine", "dry")).await?;
    assert_eq!(count.matched, 12);
    assert_eq!(count.sample.len(), 10);
    assert!(count.sample.iter().all(|id| mine.contains(id)));
    assert_eq!(count.filter.state.as_deref(), Some("error"));
    // A dry run starts nothing.
    assert!(o.client.operations(None, None).await?.operations.is_empty());

    let op = o
        .client
        .start_operation(&retry("mine", "upstream fixed"))
        .await?;
    assert_eq!((op.matched, op.action.as_str()), (12, "retry"));
    let done = o
        .client
        .wait_operation(op.id, Duration::from_secs(30), |_| {})
        .await?;
    assert_eq!(
        (done.state.as_str(), done.acted, done.skipped),
        ("complete", 12, 0),
        "{done:?}"
    );
    assert!(done.finished_at.is_some());
    for id in &mine {
        assert_eq!(o.wait(*id).await?.state, "complete", "{id}");
        assert_eq!(named(o, *id, op.id).await?, 1, "{id}");
        let history = o.client.history(*id).await?;
        let by = history.iter().find_map(|t| t.by.clone());
        assert_eq!(by.as_deref(), Some("user:oncall"), "{history:?}");
        let reason = format!("retried: operation {}: upstream fixed", op.id);
        assert!(
            history.iter().any(|t| t.reason.as_deref() == Some(&reason)),
            "{history:?}"
        );
    }
    for id in &others {
        assert_eq!(o.client.task(*id, None).await?.state, "error", "{id}");
    }
    // Nothing left to match: a second operation matches none and is complete at once.
    let again = o.client.start_operation(&retry("mine", "again")).await?;
    assert_eq!((again.matched, again.state.as_str()), (0, "complete"));
    let listed = o.client.operations(None, None).await?.operations;
    assert_eq!(
        listed.iter().map(|o| o.id).collect::<Vec<_>>(),
        [again.id, op.id]
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_operations_are_refused_with_a_code_and_start_nothing() -> anyhow::Result<()> {
    let cluster = tasker::Cluster::start().await?;
    let o = &cluster.orchestrator;
    for (body, code) in [
        (json!({"action": "delete"}), "invalid_action"),
        (
            json!({"action": "retry", "filter": {"state": "running"}}),
            "invalid_filter",
        ),
        (
            json!({"action": "cancel", "filter": {"state": "error"}}),
            "invalid_filter",
        ),
        (
            json!({"action": "retry", "filter": {"context": [1]}}),
            "invalid_filter",
        ),
        (
            json!({"action": "retry", "filter": {"name": ""}}),
            "invalid_filter",
        ),
        (
            json!({"action": "retry", "filter": {"created_after": "2026-01-02T00:00:00Z",
                                              "created_before": "2026-01-01T00:00:00Z"}}),
            "invalid_filter",
        ),
        (json!({"action": "resolve"}), "missing_result"),
        (json!({"action": "retry", "result": 1}), "invalid_json"),
        (
            json!({"action": "retry", "filter": {"colour": "red"}}),
            "invalid_json",
        ),
        (json!({"action": "retry", "reason": ""}), "invalid_json"),
    ] {
        let resp = reqwest::Client::new()
            .post(format!("{}/v1/operations", o.url()))
            .json(&body)
            .send()
            .await?;
        let status = resp.status();
        let answer: Value = resp.json().await?;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
    assert!(o.client.operations(None, None).await?.operations.is_empty());
    let unknown = o.client.operation(Uuid::now_v7()).await.unwrap_err();
    assert!(
        matches!(&unknown, tasker_client::Error::Api { status: 404, code, .. }
                 if code == "operation_not_found"),
        "{unknown}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_whose_orchestrator_is_killed_goes_on_elsewhere_acting_on_each_task_once()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // Two tasks a batch, resting 99 times as long as each batch took: slow enough to kill it
    // half way.
    env.config.operations.batch = 2;
    env.config.operations.busy_percent = 1;
    // A kill between a batch's commit and its publish leaves steps enqueued with no message: the
    // other orchestrator sends them once the dead one has been silent this long (30 s by
    // default, the whole wait below).
    env.config.orchestrator.visibility_timeout_ms = 2_000;
    let first = env.orchestrator().await?;
    env.config.worker.orchestrator_url = first.url();
    let worker = env.rust_worker();
    let ids = failed(&first, 10, "killed").await?;
    let op = first
        .client
        .start_operation(&retry("killed", "after the outage"))
        .await?;
    assert_eq!(op.matched, 10);
    let client = first.client.clone();
    let halfway = first
        .until(Duration::from_secs(30), "the first batches", || async {
            let op = client.operation(op.id).await?;
            Ok((op.acted >= 2).then_some(op))
        })
        .await?;
    assert_eq!(halfway.state, "running", "{halfway:?}");
    first.kill().await;

    // Its lease would last an hour more (made to here): another orchestrator goes on as soon as
    // the killed one's heartbeat is old, not when the lease runs out.
    sqlx::query(
        "UPDATE operations SET lease_until = clock_timestamp() + interval '1 hour' WHERE id = $1",
    )
    .bind(op.id)
    .execute(&sqlx::PgPool::connect(&env.config.database_url).await?)
    .await?;
    let second = env.orchestrator().await?;
    let done = second
        .client
        .wait_operation(op.id, Duration::from_secs(60), |_| {})
        .await?;
    assert_eq!(
        (done.state.as_str(), done.acted, done.skipped),
        ("complete", 10, 0),
        "{done:?}"
    );
    for id in &ids {
        assert_eq!(second.wait(*id).await?.state, "complete", "{id}");
        assert_eq!(named(&second, *id, op.id).await?, 1, "{id} acted on twice");
    }
    worker.stop().await;
    second.stop().await;
    env.cleanup().await
}

/// `tasker` with `args` against `url`: exit code and stdout.
fn cli(url: &str, args: &[&str]) -> anyhow::Result<(Option<i32>, String)> {
    let out = std::process::Command::new(tasker::workspace_binary("tasker")?)
        .args(["--url", url])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    anyhow::ensure!(out.status.success(), "tasker {args:?}: {stderr}");
    Ok((out.status.code(), String::from_utf8(out.stdout)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_counts_then_retries_by_filter_and_lists_the_operation() -> anyhow::Result<()> {
    let cluster = tasker::Cluster::start().await?;
    let o = &cluster.orchestrator;
    let ids = failed(o, 4, "cli").await?;
    let url = o.url();
    let filter = [
        "--name",
        "repairable",
        "--since",
        "1h",
        "--context",
        r#"{"marker": "cli"}"#,
    ];
    let dry = [&["bulk", "retry"][..], &filter, &["--dry-run"]].concat();
    let (_, out) = cli(&url, &dry)?;
    assert!(out.starts_with("would retry 4 tasks\n"), "{out}");
    assert!(ids.iter().all(|id| out.contains(&id.to_string())), "{out}");

    let run = [
        &["--json", "bulk", "retry"][..],
        &filter,
        &["--reason", "from the cli"],
    ]
    .concat();
    let (code, out) = cli(&url, &run)?;
    assert_eq!(code, Some(0));
    let op: Value = serde_json::from_str(&out)?;
    assert_eq!(
        (&op["state"], &op["matched"], &op["acted"]),
        (&json!("complete"), &json!(4), &json!(4)),
        "{op}"
    );
    let id: Uuid = op["id"].as_str().unwrap_or_default().parse()?;
    for task in &ids {
        assert_eq!(o.wait(*task).await?.state, "complete");
        assert_eq!(named(o, *task, id).await?, 1);
    }
    let (_, listed) = cli(&url, &["operations"])?;
    assert!(listed.contains(&id.to_string()), "{listed}");
    let (_, shown) = cli(&url, &["operations", "show", &id.to_string()])?;
    assert!(
        shown.contains("4 matched, 4 acted, 0 skipped, 0 left"),
        "{shown}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_that_ended_longer_ago_than_retention_audit_are_purged_in_batches()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    let mut ids = Vec::new();
    for (days, tasks) in [(40, 3), (20, 1)] {
        let id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO operations (id, action, filter, state, matched, finished_at)
             VALUES ($1, 'cancel', '{}', 'complete', $2, now() - make_interval(days => $3))",
        )
        .bind(id)
        .bind(i64::from(tasks))
        .bind(days)
        .execute(store.pool())
        .await?;
        sqlx::query(
            "INSERT INTO operation_tasks (operation_id, task_id, outcome)
             SELECT $1, gen_random_uuid(), 'done' FROM generate_series(1, $2)",
        )
        .bind(id)
        .bind(tasks)
        .execute(store.pool())
        .await?;
        ids.push(id);
    }
    let month = Duration::from_secs(30 * 86_400);
    let mut session = store
        .purge_session(true)
        .await?
        .expect("waits for the lock");
    let mut passes = Vec::new();
    loop {
        let done = session.operations(month, 2).await?;
        if done == 0 {
            break;
        }
        passes.push(done);
    }
    session.end().await;
    // Two of the old operation's tasks, its last one, then the operation itself.
    assert_eq!(passes, [2, 1, 1]);
    let left: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT o.id, (SELECT count(*) FROM operation_tasks t WHERE t.operation_id = o.id)
         FROM operations o",
    )
    .fetch_all(store.pool())
    .await?;
    assert_eq!(left, [(ids[1], 1)], "the recent operation stays whole");
    env.cleanup().await
}

/// A task's transitions as (step, from, to), in order: what a repair did, whatever its words.
async fn shape(
    o: &RunningOrchestrator,
    id: Uuid,
) -> anyhow::Result<Vec<(Option<String>, Option<String>, String)>> {
    let history = o.client.history(id).await?;
    let mut shape: Vec<_> = history
        .into_iter()
        .map(|t| (t.step, t.from, t.to))
        .collect();
    // Transitions of one commit share their time: order within it is not history.
    shape.sort();
    Ok(shape)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_retry_and_resolve_leave_each_task_as_one_repair_by_hand_does() -> anyhow::Result<()>
{
    let cluster = tasker::Cluster::start().await?;
    let o = &cluster.orchestrator;
    let by_hand = failed(o, 2, "same").await?;
    let batched = failed(o, 3, "batched").await?;
    let resolved = failed(o, 2, "resolved").await?;
    o.client
        .retry(by_hand[0], &tasker_client::RepairNote::default())
        .await?;
    let op = o.client.start_operation(&retry("batched", "x")).await?;
    let ended = o
        .client
        .wait_operation(op.id, Duration::from_secs(30), |_| {})
        .await?;
    assert_eq!((ended.acted, ended.skipped), (3, 0), "{ended:?}");
    let expected = {
        o.wait(by_hand[0]).await?;
        shape(o, by_hand[0]).await?
    };
    for id in &batched {
        assert_eq!(o.wait(*id).await?.state, "complete");
        assert_eq!(shape(o, *id).await?, expected, "{id}");
    }

    // resolve: the failed step completes with the given result, the task goes on from there.
    let resolve = StartOperation {
        action: "resolve".into(),
        result: Some(json!({"attempts": 99})),
        ..retry("resolved", "by hand")
    };
    let op = o.client.start_operation(&resolve).await?;
    let ended = o
        .client
        .wait_operation(op.id, Duration::from_secs(30), |_| {})
        .await?;
    assert_eq!((ended.acted, ended.skipped), (2, 0), "{ended:?}");
    for id in &resolved {
        let task = o.wait(*id).await?;
        assert_eq!(task.state, "complete");
        let parents = &task.result.as_ref().unwrap()["after"]["parents"];
        assert_eq!(parents["flaky"], json!({"attempts": 99}), "{task:?}");
    }
    // The task retried by hand is not the operations': they matched it neither time.
    assert_eq!(named(o, by_hand[0], op.id).await?, 0);
    assert_eq!(o.client.task(by_hand[1], None).await?.state, "error");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counts_of_a_filter_say_how_many_tasks_of_each_state_it_matches() -> anyhow::Result<()>
{
    let cluster = tasker::Cluster::start().await?;
    let o = &cluster.orchestrator;
    failed(o, 3, "counted").await?;
    for value in [1, 2] {
        let done = o
            .run_task("rust_examples", "linear", json!({"value": value}))
            .await?;
        assert_eq!(done.state, "complete");
    }
    let all = o.client.task_counts(&TaskQuery::default()).await?;
    assert_eq!(
        (all.error, all.complete, all.running, all.total),
        (3, 2, 0, 5),
        "{all:?}"
    );
    // The list's state filter narrows its page, not its counts.
    let page = o
        .client
        .tasks(&TaskQuery {
            state: Some("complete".into()),
            counts: true,
            ..TaskQuery::default()
        })
        .await?;
    assert_eq!(page.tasks.len(), 2);
    assert_eq!(page.counts.as_ref(), Some(&all));
    assert_eq!(o.client.tasks(&TaskQuery::default()).await?.counts, None);
    let (_, out) = cli(&o.url(), &["--json", "count", "--name", "repairable"])?;
    let counted: Value = serde_json::from_str(&out)?;
    assert_eq!(
        (&counted["error"], &counted["total"]),
        (&json!(3), &json!(3)),
        "{counted}"
    );
    let (_, table) = cli(&o.url(), &["count", "--since", "1h"])?;
    assert!(table.contains("total") && table.contains('5'), "{table}");
    cluster.shutdown().await
}
