//! The CLI in bulk: tasks submitted from JSON lines (namespace and name from the command line
//! for lines without them, a refused line named by its number), and a purge counted by a dry run
//! first.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_submits_json_lines_in_bulk_and_purges_with_a_dry_run_first() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let url = o.url();
    // Namespace and name from the command line for lines without them; one line refused.
    let lines = [
        r#"{"context": {"value": 1}, "idempotency_key": "line-1"}"#,
        "",
        r#"{"context": {"value": 2}, "idempotency_key": "line-2", "priority": "high"}"#,
        r#"{"name": "no_such_template", "idempotency_key": "line-3"}"#,
    ]
    .join("\n");
    let args = ["submit", "rust_examples", "linear", "--from", "-"];
    let first = tasker(&url, &args, Some(&lines))?;
    assert_eq!(
        first.code,
        Some(4),
        "a refused line: exit 4 ({})",
        first.stderr
    );
    assert!(
        first.stdout.starts_with("created 2, existing 0, refused 1"),
        "{}",
        first.stdout
    );
    assert!(
        first.stdout.contains("line 4: unknown_template:"),
        "{}",
        first.stdout
    );
    let json_args = ["--json", "submit", "rust_examples", "linear", "--from", "-"];
    let again = tasker(&url, &json_args, Some(&lines))?;
    let again: Value = serde_json::from_str(&again.stdout)?;
    assert_eq!(
        (&again["created"], &again["existing"], &again["refused"]),
        (&json!(0), &json!(2), &json!(1))
    );
    assert_eq!(again["results"][1]["line"], 3);
    assert_eq!(again["results"][1]["status"], "existing");
    // A line that is not a task: nothing is sent, exit 2 with its line number.
    let bad = tasker(&url, &args, Some("{\"context\": {}}\nnot json\n"))?;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("-:2: not valid JSON"), "{}", bad.stderr);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(o.shared.store.pool())
        .await?;
    assert_eq!(count, 2);

    // Purge: nothing is old enough; a dry run says so; bad input is refused by name.
    let dry = tasker(
        &url,
        &[
            "purge",
            "--older-than",
            "30d",
            "--state",
            "complete",
            "--dry-run",
        ],
        None,
    )?;
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(
        dry.stdout.starts_with("would purge 0 tasks"),
        "{}",
        dry.stdout
    );
    let purged = tasker(&url, &["--json", "purge", "--older-than", "2h"], None)?;
    let purged: Value = serde_json::from_str(&purged.stdout)?;
    assert_eq!((&purged["tasks"], &purged["rows"]), (&json!(0), &json!(0)));
    let short = tasker(&url, &["purge", "--older-than", "10m"], None)?;
    assert_eq!(short.code, Some(4), "{}", short.stderr);
    assert!(short.stderr.contains("at least 1h"), "{}", short.stderr);
    let state = tasker(
        &url,
        &["purge", "--older-than", "1d", "--state", "running"],
        None,
    )?;
    assert_eq!(state.code, Some(2), "clap refuses it: {}", state.stderr);
    // The policy: as configured, and nothing purged yet.
    let policy = tasker(&url, &["retention"], None)?;
    assert_eq!(policy.code, Some(0), "{}", policy.stderr);
    assert!(
        policy.stdout.contains("complete    kept 30d")
            && policy.stdout.contains("at most 5% of the time")
            && policy.stdout.contains("last purge  none remembered"),
        "{}",
        policy.stdout
    );
    let policy = tasker(&url, &["--json", "retention"], None)?;
    let policy: Value = serde_json::from_str(&policy.stdout)?;
    assert_eq!(
        (&policy["error"], &policy["last_purged_at"]),
        (&json!("90d"), &Value::Null)
    );
    o.stop().await;
    env.cleanup().await
}
