//! Repairing a task that ended in error: retry it from its failed step, retry or resolve that
//! step by name, through the API, the Rust client and the `tasker` CLI; and repairs that are
//! illegal get a stable 404/409/4xx and change nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tasker::{Cluster, post_json as post, steps_by_name, workspace_binary};
use tasker_client::{RepairNote, Task, Transition};
use uuid::Uuid;

fn note(by: &str, reason: &str) -> RepairNote {
    RepairNote {
        by: Some(by.into()),
        reason: Some(reason.into()),
    }
}

/// Everything a refused repair must leave as it was: the task row, every step row, the history.
async fn snapshot(cluster: &Cluster, task: Uuid) -> anyhow::Result<Value> {
    Ok(sqlx::query_scalar(
        "SELECT jsonb_build_object(
             'task', (SELECT to_jsonb(t) FROM tasks t WHERE t.id = $1),
             'steps', (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.id) FROM steps s WHERE s.task_id = $1),
             'history', (SELECT count(*) FROM transitions WHERE task_id = $1))",
    )
    .bind(task)
    .fetch_one(cluster.orchestrator.shared.store.pool())
    .await?)
}

/// Runs a task of the Rust fixtures that ends in error, and returns it.
async fn failed_task(cluster: &Cluster, template: &str, context: Value) -> anyhow::Result<Task> {
    let task = cluster
        .orchestrator
        .run_task("rust_examples", template, context)
        .await?;
    anyhow::ensure!(
        task.state == "error",
        "{template} did not end in error: {task:?}"
    );
    Ok(task)
}

fn manual(history: &[Transition]) -> Vec<(Option<&str>, &str, &str, Option<&str>)> {
    history
        .iter()
        .filter(|h| h.by.is_some())
        .map(|h| {
            (
                h.step.as_deref(),
                h.from.as_deref().unwrap_or("-"),
                h.to.as_str(),
                h.reason.as_deref(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_task_runs_its_failed_step_again_with_fresh_attempts_and_completes()
-> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = failed_task(
        &cluster,
        "repairable",
        json!({"value": 6, "succeed_on_attempt": 4}),
    )
    .await?;
    assert_eq!(task.error.as_ref().unwrap()["step"], "flaky");
    let before = steps_by_name(&o.client, task.id).await?;
    assert_eq!(before["flaky"].state, "failed");
    assert_eq!(
        (before["flaky"].attempt, before["flaky"].max_attempts),
        (2, 2)
    );
    assert_eq!(before["start"].state, "completed");
    assert_eq!(before["after"].state, "cancelled");
    let start_result = before["start"].result.clone();

    let running = o
        .client
        .retry(task.id, &note("user:ada", "upstream fixed"))
        .await?;
    assert_eq!(running.state, "running");
    assert_eq!(running.error, None);
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    // Attempt 3 failed and was retried on its own: the retry gave the step two attempts again.
    assert_eq!(
        done.result,
        Some(json!({"after": {"attempt": 1, "parents": {
            "flaky": {"attempts": 4},
            "side": {"value": 22}
        }}}))
    );
    let after = steps_by_name(&o.client, task.id).await?;
    assert_eq!(
        (after["flaky"].attempt, after["flaky"].max_attempts),
        (4, 4)
    );
    // Completed steps kept their results and did not run again.
    assert_eq!(after["start"].result, start_result);
    assert_eq!(after["start"].attempt, 1);

    let history = o.client.history(task.id).await?;
    let by_hand = manual(&history);
    assert!(
        by_hand.contains(&(None, "error", "running", Some("retried: upstream fixed"))),
        "{by_hand:?}"
    );
    assert!(
        by_hand.contains(&(
            Some("flaky"),
            "failed",
            "waiting_retry",
            Some("retried: upstream fixed")
        )),
        "{by_hand:?}"
    );
    assert!(
        by_hand.contains(&(Some("after"), "cancelled", "pending", Some("task repaired"))),
        "{by_hand:?}"
    );
    assert!(
        history
            .iter()
            .filter(|h| h.by.is_some())
            .all(|h| h.by.as_deref() == Some("user:ada"))
    );
    assert_eq!(
        history.last().map(|h| (h.from.as_deref(), h.to.as_str())),
        Some((Some("running"), "complete"))
    );

    // The task is complete now: a second retry is refused and changes nothing.
    let unchanged = snapshot(&cluster, task.id).await?;
    let err = o
        .client
        .retry(task.id, &RepairNote::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, tasker_client::Error::Api { status: 409, code, .. } if code == "task_not_failed"),
        "{err}"
    );
    assert_eq!(snapshot(&cluster, task.id).await?, unchanged);
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_retried_by_name_that_fails_again_ends_its_task_again() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = failed_task(&cluster, "permanent_failure", json!({})).await?;
    o.client
        .retry_step(task.id, "doomed", &note("user:ada", "one more go"))
        .await?;
    let again = o.wait(task.id).await?;
    assert_eq!(again.state, "error", "{again:?}");
    assert_eq!(again.error.as_ref().unwrap()["attempt"], 2);
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["doomed"].state, "failed");
    assert_eq!(steps["doomed"].attempt, 2);
    assert_eq!(steps["never"].state, "cancelled");
    // Failed, ended, retried by hand, failed and ended again: all in the history.
    let history = o.client.history(task.id).await?;
    let failures: Vec<(Option<&str>, &str)> = history
        .iter()
        .filter(|h| ["failed", "error", "waiting_retry"].contains(&h.to.as_str()))
        .map(|h| (h.step.as_deref(), h.to.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            (Some("doomed"), "failed"),
            (None, "error"),
            (Some("doomed"), "waiting_retry"),
            (Some("doomed"), "failed"),
            (None, "error")
        ]
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolved_step_takes_the_given_result_and_the_dag_goes_on() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    // A standard step: its child runs on the supplied result.
    let task = failed_task(&cluster, "permanent_failure", json!({})).await?;
    o.client
        .resolve(
            task.id,
            "doomed",
            &json!({"value": 21}),
            &note("user:ada", "computed by hand"),
        )
        .await?;
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"never": {"value": 42}})));
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["doomed"].result, Some(json!({"value": 21})));
    assert_eq!(
        steps["doomed"].attempt, 1,
        "a resolved step does not run again"
    );

    // A decision: the supplied result must name its branches, and the others are skipped.
    let task = failed_task(&cluster, "resolvable_decision", json!({})).await?;
    let unchanged = snapshot(&cluster, task.id).await?;
    let err = o
        .client
        .resolve(
            task.id,
            "route",
            &json!({"branches": ["banana"]}),
            &RepairNote::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, tasker_client::Error::Api { status: 422, code, message }
            if code == "invalid_result" && message.contains("banana")),
        "{err}"
    );
    assert_eq!(snapshot(&cluster, task.id).await?, unchanged);
    o.client
        .resolve(
            task.id,
            "route",
            &json!({"branches": ["large"], "value": 5}),
            &RepairNote::default(),
        )
        .await?;
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"finish": {"value": 25}})));
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["small"].state, "skipped");
    assert_eq!(steps["large"].result, Some(json!({"value": 25})));
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_repairs_get_stable_codes_and_change_nothing() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let base = o.url();
    let failed = failed_task(&cluster, "permanent_failure", json!({})).await?;
    let running = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 30_000})),
        )
        .await?;
    let unchanged = (
        snapshot(&cluster, failed.id).await?,
        snapshot(&cluster, running.id).await?,
    );
    let f = failed.id;
    let r = running.id;
    let unknown = Uuid::now_v7();
    let cases: Vec<(String, &'static str, StatusCode, &str)> = vec![
        (
            format!("/v1/tasks/{r}/retry"),
            "",
            StatusCode::CONFLICT,
            "task_not_failed",
        ),
        (
            format!("/v1/tasks/{r}/steps/slow/retry"),
            "",
            StatusCode::CONFLICT,
            "task_not_failed",
        ),
        (
            format!("/v1/tasks/{r}/steps/slow/resolve"),
            r#"{"result": {}}"#,
            StatusCode::CONFLICT,
            "task_not_failed",
        ),
        (
            format!("/v1/tasks/{unknown}/retry"),
            "",
            StatusCode::NOT_FOUND,
            "task_not_found",
        ),
        (
            format!("/v1/tasks/{unknown}/steps/doomed/retry"),
            "",
            StatusCode::NOT_FOUND,
            "task_not_found",
        ),
        (
            format!("/v1/tasks/{f}/steps/nope/retry"),
            "",
            StatusCode::NOT_FOUND,
            "step_not_found",
        ),
        (
            format!("/v1/tasks/{f}/steps/{unknown}/retry"),
            "",
            StatusCode::NOT_FOUND,
            "step_not_found",
        ),
        // `never` did not fail the task (it was cancelled): only `doomed` can be repaired.
        (
            format!("/v1/tasks/{f}/steps/never/retry"),
            "",
            StatusCode::CONFLICT,
            "step_not_failed",
        ),
        (
            format!("/v1/tasks/{f}/steps/never/resolve"),
            r#"{"result": {"value": 1}}"#,
            StatusCode::CONFLICT,
            "step_not_failed",
        ),
        (
            format!("/v1/tasks/{f}/steps/doomed/resolve"),
            "",
            StatusCode::BAD_REQUEST,
            "missing_result",
        ),
        (
            format!("/v1/tasks/{f}/steps/doomed/resolve"),
            r#"{"result": null}"#,
            StatusCode::BAD_REQUEST,
            "missing_result",
        ),
        (
            format!("/v1/tasks/{f}/retry"),
            r#"{"result": {"value": 1}}"#,
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            format!("/v1/tasks/{f}/retry"),
            r#"{"because": "x"}"#,
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            format!("/v1/tasks/{f}/retry"),
            r#"{"by": ""}"#,
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            format!("/v1/tasks/{f}/retry"),
            "{\"reason\": \"a\\u0000b\"}",
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            format!("/v1/tasks/{f}/retry"),
            "{",
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            "/v1/tasks/not-a-uuid/retry".to_owned(),
            "",
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
    ];
    for (path, body, status, code) in cases {
        let (got, answer) = post(&format!("{base}{path}"), body).await?;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "POST {path} {body}: {answer}"
        );
    }
    assert_eq!(
        (
            snapshot(&cluster, failed.id).await?,
            snapshot(&cluster, running.id).await?
        ),
        unchanged
    );
    o.client.cancel(running.id).await?;
    cluster.shutdown().await
}

/// `tasker retry`, `tasker resolve --result @FILE` and `tasker history`, as a user runs them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_retries_resolves_and_shows_the_history() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let tasker = workspace_binary("tasker")?;
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(&tasker)
            .args(["--url", &o.url()])
            .args(args)
            .env("USER", "ada")
            .output()
            .expect("running tasker");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let task = failed_task(
        &cluster,
        "repairable",
        json!({"value": 6, "succeed_on_attempt": 3}),
    )
    .await?;
    let id = task.id.to_string();
    let (code, stdout, stderr) = cli(&["retry", &id, "--reason", "fixed it", "--wait", "30"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("state    complete"), "{stdout}");
    let (code, stdout, stderr) = cli(&["history", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.contains("failed -> waiting_retry"))
        .unwrap_or_default();
    assert!(
        line.contains("flaky") && line.contains("user:ada") && line.contains("retried: fixed it"),
        "{stdout}"
    );
    // Retrying a complete task: the API's refusal, and its exit code (4).
    let (code, _, stderr) = cli(&["retry", &id]);
    assert_eq!(code, Some(4));
    assert!(stderr.contains("task_not_failed"), "{stderr}");

    let task = failed_task(&cluster, "permanent_failure", json!({})).await?;
    let id = task.id.to_string();
    let file = std::env::temp_dir().join(format!("tasker-resolve-{}.json", Uuid::now_v7()));
    std::fs::write(&file, r#"{"value": 4}"#)?;
    let at_file = format!("@{}", file.display());
    let (code, stdout, stderr) = cli(&[
        "resolve", &id, "doomed", "--result", &at_file, "--wait", "30",
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    std::fs::remove_file(&file)?;
    assert!(
        stdout.contains(r#"result   {"never":{"value":8}}"#),
        "{stdout}"
    );
    let (code, stdout, _) = cli(&["--json", "history", &id]);
    assert_eq!(code, Some(0));
    #[derive(serde::Deserialize)]
    struct Listed {
        items: Vec<Transition>,
    }
    let history = serde_json::from_str::<Listed>(&stdout)?.items;
    assert!(history.iter().any(|h| h.step.as_deref() == Some("doomed")
        && h.to == "completed"
        && h.by.as_deref() == Some("user:ada")
        && h.reason.as_deref() == Some("resolved")));
    cluster.shutdown().await
}

#[path = "repair/operations.rs"]
mod operations;
