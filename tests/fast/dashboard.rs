//! The dashboard (`/ui`): its live view is pushed by the server (`/v1/tasks/{id}/events`) and its
//! assets are embedded; in a real browser (Debian's Chromium driven by playwright-core, a script
//! of `tests/dashboard/` each, its test a module of `tests/fast/dashboard/`): a failed task
//! retried (`repair`), schedules, delays, dead letters and signals (`time`), children and
//! workers (`composition`), limits (`flow`), the audit log (`audit`), operations by filter
//! (`operations`, five tasks and 5,000), a running step (`running`), ten tabs on one connection
//! (`live`), a big task (`big_task`), long lists (`lists`), events and what they started
//! (`events`, its script next to it in `tests/fast/dashboard/`), webhooks (`webhooks`), a task's
//! streams (`streams`). Screenshots go to
//! `target/dashboard-screenshots/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tasker::{TestEnv, post_json, repo_root, steps_by_name, target_dir, workspace_binary};
use tasker_client::CreateTask;
use tasker_shared::config::AuthMode;

#[path = "dashboard/alerts.rs"]
mod alerts;
#[path = "dashboard/audit.rs"]
mod audit;
#[path = "dashboard/big_task.rs"]
mod big_task;
#[path = "dashboard/composition.rs"]
mod composition;
#[path = "dashboard/events.rs"]
mod events;
#[path = "dashboard/flow.rs"]
mod flow;
#[path = "dashboard/lists.rs"]
mod lists;
#[path = "dashboard/live.rs"]
mod live;
#[path = "dashboard/operations.rs"]
mod operations;
#[path = "dashboard/repair.rs"]
mod repair;
#[path = "dashboard/running.rs"]
mod running;
#[path = "dashboard/streams.rs"]
mod streams;
#[path = "dashboard/time.rs"]
mod time;
#[path = "dashboard/webhooks.rs"]
mod webhooks;

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

/// `script` (in `tests/dashboard/`) and the Chromium it drives (`$CHROMIUM`, default Debian's);
/// an error says how to install them.
fn browser_script(script: &str) -> anyhow::Result<(PathBuf, String)> {
    let script = repo_root().join("tests/dashboard").join(script);
    let playwright = repo_root().join("tests/dashboard/node_modules/playwright-core");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    anyhow::ensure!(
        playwright.is_dir() && Path::new(&chromium).exists(),
        "the browser test needs Chromium ({chromium}) and playwright-core ({}): \
         tests/dashboard/setup.sh installs both (bin/dev test runs it)",
        playwright.display()
    );
    Ok((script, chromium))
}

/// A test environment whose orchestrator requires tokens, with a write token `name` made by
/// `tasker-orchestrator token create` (as an operator would), which its workers use too.
async fn with_write_token(name: &str) -> anyhow::Result<(TestEnv, String)> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let created = std::process::Command::new(workspace_binary("tasker-orchestrator")?)
        .args(["token", "create", name, "--scope", "write"])
        .env("TASKER_DATABASE_URL", &env.config.database_url)
        .output()?;
    anyhow::ensure!(created.status.success(), "token create: {created:?}");
    let token = String::from_utf8(created.stdout)?.trim().to_owned();
    env.config.worker.api_token = Some(token.clone());
    Ok((env, token))
}

/// Runs a browser script (at most 120 s) with `vars`, `SCREENSHOTS` (`shots`) and `CHROMIUM` in
/// its environment: its report (the JSON of its last line) and its stderr (the browser's
/// console).
async fn run_browser(
    script: &Path,
    chromium: &str,
    shots: &Path,
    vars: &[(&str, String)],
) -> anyhow::Result<(Value, String)> {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .env("SCREENSHOTS", shots)
        .env("CHROMIUM", chromium)
        .kill_on_drop(true);
    for (name, value) in vars {
        command.env(name, value);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), command.output()).await??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            anyhow::anyhow!("no report from {}:\n{stdout}\n{stderr}", script.display())
        })?;
    Ok((report, stderr))
}

/// Where the browser scripts save their screenshots.
fn screenshots() -> PathBuf {
    target_dir().join("dashboard-screenshots")
}

/// Runs `script` (in `tests/dashboard/`) with `vars` as [`run_browser`] does and asserts its tour
/// was clean, console included ([`assert_clean`]): its report.
async fn clean_tour(script: &str, vars: &[(&str, String)]) -> anyhow::Result<Value> {
    let (script, chromium) = browser_script(script)?;
    let shots = screenshots();
    let (report, stderr) = run_browser(&script, &chromium, &shots, vars).await?;
    assert_clean(&report, &stderr, &shots, true);
    Ok(report)
}

/// Asserts that a browser script's tour passed (`ok`) with no page error and, when
/// `console` says so, no console error either.
fn assert_clean(report: &Value, stderr: &str, shots: &Path, console: bool) {
    assert_eq!(
        report["ok"],
        true,
        "{report}\n{stderr}\nscreenshots: {}",
        shots.display()
    );
    assert_eq!(report["pageErrors"], json!([]), "{report}");
    if console {
        assert_eq!(report["consoleErrors"], json!([]), "{report}\n{stderr}");
    }
}

/// Asserts that the browser script saved each of `names` (PNG files of more than 1 kB).
fn assert_screenshots(shots: &Path, names: &[&str]) {
    for shot in names {
        let file = shots.join(format!("{shot}.png"));
        assert!(
            std::fs::metadata(&file)
                .map(|m| m.len() > 1_000)
                .unwrap_or(false),
            "{}",
            file.display()
        );
    }
}

/// `GET` of `url`, which must answer 200: its JSON.
async fn get_json(url: &str) -> anyhow::Result<Value> {
    let resp = reqwest::get(url).await?;
    anyhow::ensure!(resp.status() == 200, "GET {url}: {}", resp.status());
    Ok(resp.json().await?)
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
