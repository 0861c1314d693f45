//! The `tasker` CLI as a user runs it: JSON from a file or stdin, every page of a list, one JSON
//! document per command, waits longer than the server's cap, completions, and an exit code per
//! class of failure.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv, workspace_binary};
use uuid::Uuid;

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn tasker(url: &str, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Out> {
    tasker_with(url, args, stdin, &[])
}

/// [`tasker`] with these environment variables set.
fn tasker_with(
    url: &str,
    args: &[&str],
    stdin: Option<&str>,
    vars: &[(&str, &str)],
) -> anyhow::Result<Out> {
    let mut child = Command::new(workspace_binary("tasker")?)
        .args(["--url", url])
        .args(args)
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut pipe = child.stdin.take().expect("stdin is piped");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes())?;
    }
    drop(pipe);
    let out = child.wait_with_output()?;
    Ok(Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reads_json_pages_waits_past_the_cap_and_exits_by_failure_class()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // A cap of one second on each long poll: `tasker wait` must loop past it.
    env.config.orchestrator.max_wait_seconds = 1;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let url = o.url();

    // --context from a file and from stdin.
    let file = std::env::temp_dir().join(format!("tasker-cli-{}.json", Uuid::now_v7()));
    std::fs::write(&file, r#"{"value": 6}"#)?;
    let at_file = format!("@{}", file.display());
    let from_file = tasker(
        &url,
        &[
            "--json",
            "submit",
            "rust_examples",
            "linear",
            "--context",
            &at_file,
            "--wait",
            "30",
        ],
        None,
    )?;
    std::fs::remove_file(&file)?;
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    // One JSON document: the task and its steps.
    let doc: Value = serde_json::from_str(&from_file.stdout)?;
    assert_eq!(doc["task"]["result"], json!({"halve": {"value": 242}}));
    assert_eq!(doc["steps"].as_array().map(Vec::len), Some(4));
    let from_stdin = tasker(
        &url,
        &[
            "submit",
            "rust_examples",
            "linear",
            "--context",
            "-",
            "--wait",
            "30",
        ],
        Some(r#"{"value": 1}"#),
    )?;
    assert_eq!(from_stdin.code, Some(0), "{}", from_stdin.stderr);
    assert!(
        from_stdin
            .stdout
            .contains(r#"result   {"halve":{"value":72}}"#),
        "{}",
        from_stdin.stdout
    );

    // `show --json` is one document too.
    let id = doc["task"]["id"].as_str().unwrap_or_default().to_owned();
    let show = tasker(&url, &["--json", "show", &id], None)?;
    let shown: Value = serde_json::from_str(&show.stdout)?;
    assert_eq!(shown["task"]["id"], doc["task"]["id"]);
    assert_eq!(shown["steps"], doc["steps"]);

    // A wait of 4 s on a 2.5 s task, against a server that holds each poll at most 1 s.
    let slow = tasker(
        &url,
        &[
            "--json",
            "submit",
            "rust_examples",
            "slow_chain",
            "--context",
            r#"{"sleep_ms": 2500}"#,
        ],
        None,
    )?;
    let slow: Value = serde_json::from_str(&slow.stdout)?;
    let slow_id = slow["id"].as_str().unwrap_or_default().to_owned();
    let waited = tasker(&url, &["wait", &slow_id, "--timeout", "30"], None)?;
    assert_eq!(waited.code, Some(0), "{}{}", waited.stdout, waited.stderr);
    assert!(
        waited.stdout.contains("state    complete"),
        "{}",
        waited.stdout
    );

    // Every page with --all; one page and a hint without.
    for value in 0..3 {
        let ctx = format!(r#"{{"value": {value}}}"#);
        let out = tasker(
            &url,
            &["submit", "rust_examples", "linear", "--context", &ctx],
            None,
        )?;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let first = tasker(&url, &["list", "--limit", "2"], None)?;
    assert_eq!(first.stdout.lines().count(), 3, "{}", first.stdout);
    let hint = first.stderr.trim();
    assert!(hint.starts_with("more: tasker list --before "), "{hint}");
    let all = tasker(&url, &["--json", "list", "--limit", "2", "--all"], None)?;
    let all: Value = serde_json::from_str(&all.stdout)?;
    assert_eq!(all["next"], Value::Null, "--all reads every page: {all}");
    let ids: Vec<&str> = all["items"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["id"].as_str()).collect())
        .unwrap_or_default();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (6, 6), "{all}");
    let before = hint
        .trim_start_matches("more: tasker list --before ")
        .split(' ')
        .next();
    let second = tasker(
        &url,
        &[
            "list",
            "--limit",
            "2",
            "--before",
            before.unwrap_or_default(),
        ],
        None,
    )?;
    assert!(second.stdout.contains(ids[2]), "{}", second.stdout);

    // Completions.
    let bash = tasker(&url, &["completions", "bash"], None)?;
    assert_eq!(bash.code, Some(0));
    assert!(
        bash.stdout.contains("complete -F _tasker"),
        "{}",
        bash.stdout
    );

    // Exit codes by class.
    let failed = tasker(
        &url,
        &[
            "submit",
            "rust_examples",
            "permanent_failure",
            "--wait",
            "30",
        ],
        None,
    )?;
    assert_eq!(failed.code, Some(1), "task in error: {}", failed.stdout);
    let running = tasker(
        &url,
        &[
            "--json",
            "submit",
            "rust_examples",
            "slow_chain",
            "--context",
            r#"{"sleep_ms": 30000}"#,
            "--wait",
            "0.5",
        ],
        None,
    )?;
    assert_eq!(running.code, Some(3), "still running: {}", running.stderr);
    let running: Value = serde_json::from_str(&running.stdout)?;
    let cancel = tasker(
        &url,
        &["cancel", running["task"]["id"].as_str().unwrap_or_default()],
        None,
    )?;
    assert_eq!(cancel.code, Some(0), "{}", cancel.stderr);
    let bad_json = tasker(
        &url,
        &["submit", "rust_examples", "linear", "--context", "{"],
        None,
    )?;
    assert_eq!(bad_json.code, Some(2), "{}", bad_json.stderr);
    assert!(
        bad_json.stderr.contains("--context is not valid JSON"),
        "{}",
        bad_json.stderr
    );
    let usage = tasker(&url, &["list", "--limit"], None)?;
    assert_eq!(usage.code, Some(2));
    let unknown = tasker(&url, &["show", &Uuid::now_v7().to_string()], None)?;
    assert_eq!(unknown.code, Some(4), "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("task_not_found"),
        "{}",
        unknown.stderr
    );
    let nowhere = tasker("http://127.0.0.1:9", &["list"], None)?;
    assert_eq!(nowhere.code, Some(5), "{}", nowhere.stderr);
    // Under --json a failure is JSON too, on stderr, with the same exit code; stdout is empty.
    let id = Uuid::now_v7().to_string();
    for (args, url, code, exit) in [
        (
            vec!["--json", "show", id.as_str()],
            url.as_str(),
            "task_not_found",
            4,
        ),
        (
            vec!["--json", "list"],
            "http://127.0.0.1:9",
            "unreachable",
            5,
        ),
        (
            vec![
                "--json",
                "submit",
                "rust_examples",
                "linear",
                "--context",
                "{",
            ],
            url.as_str(),
            "local_input",
            2,
        ),
        (vec!["--json", "list", "--limit"], url.as_str(), "usage", 2),
    ] {
        let failed = tasker(url, &args, None)?;
        assert_eq!(failed.code, Some(exit), "{args:?}: {}", failed.stderr);
        assert!(failed.stdout.is_empty(), "{args:?}: {}", failed.stdout);
        let error: Value = serde_json::from_str(failed.stderr.trim())
            .map_err(|e| anyhow::anyhow!("{args:?}: {e}: {}", failed.stderr))?;
        assert_eq!(error["error"]["code"], code, "{args:?}: {error}");
        assert_eq!(error["error"]["exit_code"], exit, "{args:?}: {error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{args:?}: {error}"
        );
    }

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_starts_later_signals_and_manages_schedules_with_file_and_line_errors()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let url = o.url();
    let dir = std::env::temp_dir().join(format!("tasker-cli-time-{}", Uuid::now_v7()));
    std::fs::create_dir_all(dir.join("schedules"))?;
    std::fs::write(
        dir.join("approve.yaml"),
        "namespace: timed\nname: approve\nversion: '1'\nsteps:\n  - name: approval\n    wait: {signal: ok, timeout: 1h}\n",
    )?;
    std::fs::write(
        dir.join("schedules/nightly.yaml"),
        "namespace: timed\nname: nightly\ntemplate: approve\ncron: '30 2 * * *'\ntimezone: America/New_York\n",
    )?;
    let d = dir.display().to_string();
    let validated = tasker(&url, &["templates", "validate", &d], None)?;
    assert_eq!(validated.code, Some(0), "{}", validated.stderr);
    assert!(
        validated.stdout.contains("ok  schedule timed/nightly"),
        "{}",
        validated.stdout
    );
    // The same as JSON; a refused file as a JSON error with exit code 1.
    let listed = tasker(&url, &["--json", "templates", "validate", &d], None)?;
    let listed: Value = serde_json::from_str(&listed.stdout)?;
    assert_eq!(
        (
            &listed["templates"][0]["name"],
            &listed["schedules"][0]["name"]
        ),
        (&json!("approve"), &json!("nightly")),
        "{listed}"
    );
    let bad = std::env::temp_dir().join(format!("tasker-cli-bad-{}", Uuid::now_v7()));
    std::fs::create_dir_all(&bad)?;
    std::fs::write(bad.join("bad.yaml"), "namespace: timed\nname: [unclosed\n")?;
    let refused = tasker(
        &url,
        &[
            "--json",
            "templates",
            "validate",
            &bad.display().to_string(),
        ],
        None,
    )?;
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    let refused: Value = serde_json::from_str(&refused.stderr)?;
    assert_eq!(
        (&refused["error"]["code"], &refused["error"]["exit_code"]),
        (&json!("invalid_template"), &json!(1)),
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("bad.yaml"),
        "{refused}"
    );
    std::fs::remove_dir_all(&bad)?;
    let registered = tasker(&url, &["templates", "register", &d], None)?;
    assert_eq!(registered.code, Some(0), "{}", registered.stderr);
    // Again, as JSON: the same definition, unchanged.
    let again = tasker(&url, &["--json", "templates", "register", &d], None)?;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let again: Value = serde_json::from_str(&again.stdout)?;
    assert_eq!(
        (
            &again["registered"][0]["template"],
            &again["registered"][0]["created"],
            &again["refused"]
        ),
        (&json!("timed/approve@1"), &json!(false), &json!([])),
        "{again}"
    );
    let applied = tasker(&url, &["schedules", "apply", &d], None)?;
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);
    assert!(
        applied.stdout.contains("created timed/nightly"),
        "{}",
        applied.stdout
    );
    let shown = tasker(&url, &["schedules", "show", "timed/nightly"], None)?;
    assert!(
        shown.stdout.contains("30 2 * * * (America/New_York)"),
        "{}",
        shown.stdout
    );
    assert_eq!(shown.stdout.matches("then").count(), 4, "{}", shown.stdout);
    assert_eq!(shown.stdout.matches("next").count(), 1, "{}", shown.stdout);
    let paused = tasker(
        &url,
        &[
            "--json",
            "schedules",
            "pause",
            "timed/nightly",
            "--note",
            "holiday",
        ],
        None,
    )?;
    let paused: Value = serde_json::from_str(&paused.stdout)?;
    assert_eq!(
        (paused["paused"].clone(), paused["note"].clone()),
        (json!(true), json!("holiday"))
    );

    // A bad schedule file: refused offline with its file and line, nothing sent.
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "namespace: timed\nname: bad\ntemplate: approve\ncron: '61 * * * *'\n",
    )?;
    let refused = tasker(
        &url,
        &["schedules", "apply", &bad.display().to_string()],
        None,
    )?;
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("bad.yaml:4") && refused.stderr.contains("cron"),
        "{}",
        refused.stderr
    );

    // Later, then a signal.
    let later = tasker(
        &url,
        &["--json", "submit", "timed", "approve", "--in", "1h"],
        None,
    )?;
    let later: Value = serde_json::from_str(&later.stdout)?;
    assert_eq!(later["state"], "scheduled");
    let now = tasker(&url, &["--json", "submit", "timed", "approve"], None)?;
    let id = serde_json::from_str::<Value>(&now.stdout)?["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let sent = tasker(
        &url,
        &[
            "signal",
            &id,
            "ok",
            "--payload",
            r#"{"by": "cli"}"#,
            "--id",
            "one",
        ],
        None,
    )?;
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    let done = tasker(&url, &["--json", "wait", &id, "--timeout", "20"], None)?;
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let doc: Value = serde_json::from_str(&done.stdout)?;
    assert_eq!(doc["task"]["result"], json!({"approval": {"by": "cli"}}));
    let signals = tasker(&url, &["signals", &id], None)?;
    assert!(signals.stdout.contains("approval"), "{}", signals.stdout);
    let finished = tasker(&url, &["signal", &id, "ok"], None)?;
    assert_eq!(finished.code, Some(4), "{}", finished.stderr);
    assert!(
        finished.stderr.contains("task_finished"),
        "{}",
        finished.stderr
    );

    std::fs::remove_dir_all(&dir)?;
    o.stop().await;
    env.cleanup().await
}

#[path = "cli/alerts.rs"]
mod alerts;
#[path = "cli/bulk.rs"]
mod bulk;
#[path = "cli/triage.rs"]
mod triage;
#[path = "cli/webhooks.rs"]
mod webhooks;
