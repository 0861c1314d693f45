//! The CLI for triage: one list shape for every list (`--output json`: `{items, next}`;
//! `jsonl`: an item a line), a task found by the beginning of its id or by its idempotency key,
//! times in one format with their zone (`--time-format`, `TZ`), and a pager on a terminal.

use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv};

use super::tasker;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_share_one_shape_tasks_are_found_by_id_prefix_or_key_and_times_say_their_zone()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let url = o.url();

    let mut ids = Vec::new();
    for value in 0..3 {
        let ctx = format!(r#"{{"value": {value}}}"#);
        let key = format!("triage-{value}");
        let out = tasker(
            &url,
            &[
                "--json",
                "submit",
                "rust_examples",
                "linear",
                "--context",
                &ctx,
                "--idempotency-key",
                &key,
                "--wait",
                "30",
            ],
            None,
        )?;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let doc: Value = serde_json::from_str(&out.stdout)?;
        ids.push(doc["task"]["id"].as_str().unwrap_or_default().to_owned());
    }

    // `--output json`: the envelope, `next` naming the page after; jsonl: a task a line.
    let page = tasker(&url, &["--output", "json", "list", "--limit", "2"], None)?;
    assert_eq!(page.code, Some(0), "{}", page.stderr);
    let page: Value = serde_json::from_str(&page.stdout)?;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{page}");
    assert_eq!(page["next"], page["items"][1]["id"], "{page}");
    let lines = tasker(&url, &["--output", "jsonl", "list", "--all"], None)?;
    let listed: Vec<Value> = lines
        .stdout
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let mut listed: Vec<&str> = listed.iter().filter_map(|t| t["id"].as_str()).collect();
    listed.sort_unstable();
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(listed, expected, "{}", lines.stdout);
    // Lists that were bare arrays or other envelopes have the same shape.
    for args in [
        &["--json", "workers"][..],
        &["--json", "history", &ids[0]],
        &["--json", "templates", "list"],
    ] {
        let out = tasker(&url, args, None)?;
        let doc: Value = serde_json::from_str(&out.stdout)?;
        assert!(
            doc["items"].is_array() && doc.get("next").is_some(),
            "{args:?}: {doc}"
        );
    }

    // By the beginning of an id (with its hyphen; ids begin with their time, so the first 8
    // digits match all three), and by idempotency key.
    let all_three = tasker(&url, &["--json", "list", "--id-prefix", &ids[1][..9]], None)?;
    let all_three: Value = serde_json::from_str(&all_three.stdout)?;
    assert_eq!(
        all_three["items"].as_array().map(Vec::len),
        Some(3),
        "{all_three}"
    );
    let found = tasker(
        &url,
        &["--json", "list", "--id-prefix", &ids[1][..13]],
        None,
    )?;
    let found: Value = serde_json::from_str(&found.stdout)?;
    assert_eq!(found["items"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(
        found["items"][0]["id"].as_str(),
        Some(ids[1].as_str()),
        "{found}"
    );
    let by_key = tasker(
        &url,
        &["--json", "list", "--idempotency-key", "triage-2"],
        None,
    )?;
    let by_key: Value = serde_json::from_str(&by_key.stdout)?;
    assert_eq!(
        by_key["items"].as_array().map(Vec::len),
        Some(1),
        "{by_key}"
    );
    assert_eq!(by_key["items"][0]["id"].as_str(), Some(ids[2].as_str()));
    let bad = tasker(&url, &["--json", "list", "--id-prefix", "xyz"], None)?;
    assert_eq!(bad.code, Some(4), "{}", bad.stderr);
    assert!(bad.stderr.contains("invalid_id_prefix"), "{}", bad.stderr);

    // Times in the zone TZ names, in the format asked for; an unknown zone is a usage error.
    let history = |tz: &str, format: &str| {
        let mut cmd = std::process::Command::new(tasker::workspace_binary("tasker")?);
        cmd.args(["--url", &url, "--time-format", format, "history", &ids[0]])
            .env("TZ", tz);
        anyhow::Ok(cmd.output()?)
    };
    let paris = history("Europe/Paris", "rfc3339")?;
    let text = String::from_utf8_lossy(&paris.stdout);
    assert!(paris.status.success(), "{paris:?}");
    assert!(text.contains("+01:00") || text.contains("+02:00"), "{text}");
    let utc = history("", "default")?;
    assert!(
        String::from_utf8_lossy(&utc.stdout).contains(" UTC "),
        "{utc:?}"
    );
    let mars = history("Mars/Olympus", "default")?;
    assert_eq!(mars.status.code(), Some(2), "{mars:?}");
    assert!(
        String::from_utf8_lossy(&mars.stderr).contains("Mars/Olympus"),
        "{mars:?}"
    );

    // On a terminal (`script` gives the command one) a long answer goes through the pager;
    // with --no-pager, or into a pipe, it does not.
    let paged = |extra: &str| {
        let file = std::env::temp_dir().join(format!("tasker-pager-{}", uuid::Uuid::now_v7()));
        let command = format!(
            "{} --url {url} {extra} history {}",
            tasker::workspace_binary("tasker")?.display(),
            ids[0]
        );
        let out = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("TASKER_PAGER", format!("cat > {}", file.display()))
            .stdin(std::process::Stdio::null())
            .output()?;
        assert!(out.status.success(), "{out:?}");
        let seen = std::fs::read_to_string(&file).ok();
        let _ = std::fs::remove_file(&file);
        anyhow::Ok((seen, String::from_utf8_lossy(&out.stdout).into_owned()))
    };
    let (through_pager, _) = paged("")?;
    let through_pager = through_pager.unwrap_or_default();
    assert!(
        through_pager.contains("pending -> enqueued"),
        "{through_pager}"
    );
    let (no_pager, on_terminal) = paged("--no-pager")?;
    assert_eq!(no_pager, None, "--no-pager starts none");
    assert!(on_terminal.contains("pending -> enqueued"), "{on_terminal}");

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
