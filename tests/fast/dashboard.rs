//! The dashboard (`/ui`): its live view is pushed by the server (`/v1/tasks/{id}/events`), and in
//! a real browser (Debian's Chromium, driven by playwright-core: `tests/dashboard/repair.mjs`) a
//! failed task is opened (after the page asks for the API token the orchestrator requires),
//! retried and seen to complete. Screenshots go to
//! `target/dashboard-screenshots/`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tasker::{TestEnv, repo_root, target_dir, workspace_binary};
use tasker_client::CreateTask;
use tasker_shared::config::AuthMode;

/// Reads Server-Sent Events from a streaming response: `(event, data)` frames.
struct Frames {
    resp: reqwest::Response,
    buffer: String,
}

impl Frames {
    async fn next(&mut self) -> anyhow::Result<(String, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut data) = (String::new(), Vec::new());
                for line in frame.lines() {
                    if let Some(e) = line.strip_prefix("event:") {
                        event = e.trim().to_owned();
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
                    }
                }
                if event.is_empty() && data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Ok((event, data.join("\n")));
            }
            let chunk = self
                .resp
                .chunk()
                .await?
                .ok_or_else(|| anyhow::anyhow!("stream ended"))?;
            self.buffer.push_str(std::str::from_utf8(&chunk)?);
        }
    }

    /// The next snapshot, within `timeout`.
    async fn snapshot(&mut self, timeout: Duration) -> anyhow::Result<Value> {
        let (event, data) = tokio::time::timeout(timeout, self.next()).await??;
        anyhow::ensure!(event == "snapshot", "unexpected event {event:?}");
        Ok(serde_json::from_str(&data)?)
    }
}

fn states(snapshot: &Value) -> Vec<(String, String)> {
    let mut s: Vec<(String, String)> = snapshot["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("").to_owned(),
                s["state"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    s.sort();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_pushes_a_snapshot_on_every_change() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?;
    let resp = reqwest::get(format!("{}/v1/tasks/{}/events", o.url(), task.id)).await?;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut frames = Frames {
        resp,
        buffer: String::new(),
    };
    let first = frames.snapshot(Duration::from_secs(5)).await?;
    assert_eq!(first["task"]["state"], "running");
    assert_eq!(
        states(&first),
        [
            ("add_ten", "pending"),
            ("double", "enqueued"),
            ("halve", "pending"),
            ("square", "pending")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );

    // No worker yet: nothing changes, so nothing is sent. Then each change is pushed.
    let worker = env.rust_worker();
    let mut seen = vec![first];
    while seen.last().unwrap()["task"]["state"] == "running" {
        seen.push(frames.snapshot(Duration::from_secs(20)).await?);
    }
    let last = seen.last().unwrap();
    assert_eq!(last["task"]["state"], "complete");
    assert_eq!(last["task"]["result"], json!({"halve": {"value": 242}}));
    assert!(states(last).iter().all(|(_, s)| s == "completed"), "{last}");
    let histories: Vec<usize> = seen
        .iter()
        .map(|s| s["history"].as_array().map_or(0, Vec::len))
        .collect();
    assert!(
        histories.windows(2).all(|w| w[0] < w[1]),
        "every snapshot has something new: {histories:?}"
    );

    let unknown = reqwest::get(format!(
        "{}/v1/tasks/{}/events",
        o.url(),
        uuid::Uuid::now_v7()
    ))
    .await?;
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.json().await?;
    assert_eq!(body["error"]["code"], "task_not_found");

    // The orchestrator stops although a stream is open.
    tokio::time::timeout(Duration::from_secs(10), o.stop()).await?;
    worker.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_serves_its_embedded_assets() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    for (path, kind, needle) in [
        ("/ui", "text/html", "/ui/app.js"),
        ("/ui/", "text/html", "/ui/app.css"),
        ("/ui/app.js", "text/javascript", "/events"),
        ("/ui/app.css", "text/css", "{"),
    ] {
        let resp = reqwest::get(format!("{}{path}", o.url())).await?;
        assert_eq!(resp.status(), 200, "{path}");
        let content_type = resp.headers()["content-type"].to_str()?.to_owned();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        assert!(resp.text().await?.contains(needle), "{path}");
    }
    let missing = reqwest::get(format!("{}/ui/nope.js", o.url())).await?;
    assert_eq!(missing.status(), 404);
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_retried_from_the_dashboard_in_a_real_browser() -> anyhow::Result<()> {
    let script = repo_root().join("tests/dashboard/repair.mjs");
    let playwright = repo_root().join("tests/dashboard/node_modules/playwright-core");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    anyhow::ensure!(
        playwright.is_dir() && Path::new(&chromium).exists(),
        "the browser test needs Chromium ({chromium}) and playwright-core ({}): \
         tests/dashboard/setup.sh installs both (bin/dev test runs it)",
        playwright.display()
    );
    // Tokens required, as off loopback: the page must ask for one before it shows anything.
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let created = std::process::Command::new(workspace_binary("tasker-orchestrator")?)
        .args(["token", "create", "dashboard-test", "--scope", "write"])
        .env("TASKER_DATABASE_URL", &env.config.database_url)
        .output()?;
    anyhow::ensure!(created.status.success(), "token create: {created:?}");
    let token = String::from_utf8(created.stdout)?.trim().to_owned();
    env.config.worker.api_token = Some(token.clone());
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let failed = o
        .run_task(
            "rust_examples",
            "repairable",
            json!({"value": 6, "succeed_on_attempt": 4}),
        )
        .await?;
    assert_eq!(failed.state, "error", "{failed:?}");

    let shots = target_dir().join("dashboard-screenshots");
    let run = tokio::process::Command::new("node")
        .arg(&script)
        .env("TASKER_URL", o.url())
        .env("TASK_ID", failed.id.to_string())
        .env("TASKER_TOKEN", &token)
        .env("TEMPLATE", "rust_examples/repairable@1.0.0")
        .env("SCREENSHOTS", &shots)
        .env("CHROMIUM", &chromium)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run).await??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            anyhow::anyhow!("no report from {}:\n{stdout}\n{stderr}", script.display())
        })?;
    assert_eq!(
        report["ok"],
        true,
        "{report}\n{stderr}\nscreenshots: {}",
        shots.display()
    );
    assert_eq!(report["pageErrors"], json!([]), "{report}");
    assert_eq!(report["askedForToken"], true, "{report}");
    assert_eq!(report["listedState"], "error");
    let before = &report["before"];
    assert_eq!(
        (&before["start"], &before["flaky"], &before["after"]),
        (&json!("completed"), &json!("failed"), &json!("cancelled")),
        "{report}"
    );
    // `side` ran beside `flaky`: done, or cancelled when the task failed first.
    assert!(
        before["side"] == "completed" || before["side"] == "cancelled",
        "{report}"
    );
    assert_eq!(report["failedSteps"], json!(["flaky"]));
    assert_eq!(report["errorShown"], true);
    assert_eq!(
        report["after"],
        json!({"start": "completed", "side": "completed", "flaky": "completed", "after": "completed"})
    );
    assert_eq!(report["waterfallRows"], 4);
    assert_eq!(report["handlerBars"], 4);
    assert_eq!(report["historyHasReason"], true);
    assert_eq!(report["retryHidden"], true);
    assert_eq!(
        report["templateNodes"],
        json!(["after", "flaky", "side", "start"])
    );
    assert_eq!(report["deadLetters"], 0);
    for shot in [
        "1-tasks",
        "2-failed",
        "3-complete",
        "4-template",
        "5-dead-letters",
    ] {
        let file = shots.join(format!("{shot}.png"));
        assert!(
            std::fs::metadata(&file)
                .map(|m| m.len() > 1_000)
                .unwrap_or(false),
            "{}",
            file.display()
        );
    }

    // What the browser did, as the API records it.
    let task = o.client.task(failed.id, None).await?;
    assert_eq!(task.state, "complete");
    let history = o.client.history(failed.id).await?;
    assert!(
        history.iter().any(
            |h| h.by.as_deref() == Some("dashboard (token dashboard-test)")
                && h.reason.as_deref() == Some("retried: retried from the dashboard test")
        ),
        "{history:#?}"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
