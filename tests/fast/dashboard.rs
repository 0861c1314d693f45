//! The dashboard (`/ui`): its live view is pushed by the server (`/v1/tasks/{id}/events`), and in
//! a real browser (Debian's Chromium, driven by playwright-core: `tests/dashboard/repair.mjs`) a
//! failed task is opened (after the page asks for the API token the orchestrator requires),
//! retried and seen to complete, its timeline shows every attempt and zooms from the minutes
//! the repair took to a handler's microseconds (a non-zero tooltip), a task is started from a
//! template page (a context the schema refuses first), the live task list shows a new task
//! without a reload, and the list filters by a context value and by time; with
//! `tests/dashboard/time.mjs`, a schedule is listed, triggered and paused, a delayed task is
//! found in state `scheduled` and cancelled after a confirmation, a dead letter is discarded
//! after one, and a step waiting for a signal says so and completes with the signal sent from
//! the page; with
//! `tests/dashboard/composition.mjs`, a parent task lists its child, the child links back to its
//! parent and the step that started it, and the Workers page lists a live worker; with
//! `tests/dashboard/flow.mjs`, a throttled step says which key holds it and until when, a
//! high-priority task says so, and the Limits page lists the keys and pauses (after a
//! confirmation) and resumes a rate key; with `tests/dashboard/audit.mjs`, the audit log lists
//! every request that changed something (a refused one marked so), filters it by namespace and
//! method, and shows an admin of one namespace only that namespace's rows; with
//! `tests/dashboard/operations.mjs` (`dashboard/operations.rs`), every failed task of a template is
//! retried from the task list as one operation; with `tests/dashboard/running.mjs`
//! (`dashboard/running.rs`), a step whose handler sleeps is shown running on its worker with a
//! growing timeline bar, then completed live; with `tests/dashboard/tabs.mjs` (`dashboard/live.rs`),
//! ten task tabs share one connection and all stay live, and the assets are served gzipped with
//! an ETag. Screenshots go to
//! `target/dashboard-screenshots/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tasker::{TestEnv, post_json, repo_root, steps_by_name, target_dir, workspace_binary};
use tasker_client::CreateTask;
use tasker_shared::config::AuthMode;

#[path = "dashboard/big_task.rs"]
mod big_task;
#[path = "dashboard/lists.rs"]
mod lists;
#[path = "dashboard/live.rs"]
mod live;
#[path = "dashboard/operations.rs"]
mod operations;
#[path = "dashboard/running.rs"]
mod running;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_retried_from_the_dashboard_in_a_real_browser() -> anyhow::Result<()> {
    let (script, chromium) = browser_script("repair.mjs")?;
    // Tokens required, as off loopback: the page must ask for one before it shows anything.
    let (env, token) = with_write_token("dashboard-test").await?;
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
    let (report, stderr) = run_browser(
        &script,
        &chromium,
        &shots,
        &[
            ("TASKER_URL", o.url()),
            ("TASK_ID", failed.id.to_string()),
            ("TASKER_TOKEN", token),
            ("TEMPLATE", "rust_examples/repairable@1.0.0".to_owned()),
            ("START_TEMPLATE", "rust_examples/linear@1.0.0".to_owned()),
        ],
    )
    .await?;
    assert_clean(&report, &stderr, &shots, false);
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
    let has = |field: &Value, needle: &str| field.as_str().is_some_and(|s| s.contains(needle));

    // `flaky`'s error, from its 3rd attempt, folded as an earlier attempt's: no red box.
    assert_eq!(
        report["earlierError"],
        json!({"summary": "earlier attempt failed: transient: attempt 3 fails, 4 succeeds",
            "open": false, "redBoxes": 0}),
        "{report}"
    );
    // The timeline: a bar for each of its 4 attempts, the first 3 failed.
    assert_eq!(
        report["attempts"],
        json!({"all": [1, 2, 3, 4], "failed": [1, 2, 3]}),
        "{report}"
    );
    assert_eq!(report["attemptBars"], 4, "{report}");
    // Zoom in halves the window (µs from the task's creation) about its middle; Fit shows all.
    let window = |v: &Value| (v[0].as_f64().unwrap_or(-1.0), v[1].as_f64().unwrap_or(-1.0));
    let (from, to) = window(&report["zoom"]["before"]);
    let (zoomed_from, zoomed_to) = window(&report["zoom"]["zoomedIn"]);
    assert!(from == 0.0 && to > 0.0, "{report}");
    assert!(
        (zoomed_from - to / 4.0).abs() <= 2.0 && (zoomed_to - to * 3.0 / 4.0).abs() <= 2.0,
        "{report}"
    );
    assert_eq!(report["zoom"]["fit"], report["zoom"]["before"], "{report}");
    // A handler of less than 1 ms: its tooltip says how long, in µs; zoomed on its step then on
    // it, it grows from a sliver to most of the track.
    let micro_us = report["microBarUs"].as_f64().unwrap_or(0.0);
    assert!(micro_us > 0.0 && micro_us < 1000.0, "{report}");
    assert!(
        has(&report["microBarTitle"], "handler ") && has(&report["microBarTitle"], " µs"),
        "{report}"
    );
    let micro = &report["microBar"];
    let width = |i: usize| micro["widths"][i].as_f64().unwrap_or(0.0);
    let track = micro["track"].as_f64().unwrap_or(f64::MAX);
    assert!(width(1) >= width(0) && width(2) > track / 2.0, "{report}");

    // Started from the linear template's page: prefilled from its schema, a syntax error caught
    // as typed, the schema's refusal shown with the failing path, then a task that completed.
    assert_eq!(report["startPrefill"], json!({"value": 0}), "{report}");
    assert!(has(&report["startSyntax"]["error"], "not JSON"), "{report}");
    assert_eq!(report["startSyntax"]["submitDisabled"], true, "{report}");
    assert_eq!(report["startSyntax"]["clearedWhenFixed"], true, "{report}");
    assert!(
        has(&report["startRefused"], "context_schema_violation")
            && has(&report["startRefused"], "/value"),
        "{report}"
    );
    assert_eq!(report["startedState"], "complete", "{report}");
    let started: uuid::Uuid = report["startedTaskId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no started task: {report}"))?
        .parse()?;
    let started = o.client.task(started, None).await?;
    assert_eq!(
        (
            started.name.as_str(),
            started.idempotency_key.as_deref(),
            &started.result
        ),
        (
            "linear",
            Some("started-from-the-dashboard"),
            &Some(json!({"halve": {"value": 242}}))
        ),
        "{started:?}"
    );

    // The live list showed the task created meanwhile, highlighted, without a reload; the
    // context filter found it alone, one not JSON was refused (nothing sent), and nothing was
    // created before 2000.
    assert_eq!(report["liveRowAppeared"], true, "{report}");
    assert_eq!(report["liveRow"]["highlighted"], true, "{report}");
    assert_eq!(report["liveRow"]["notReloaded"], true, "{report}");
    assert_eq!(
        report["contextFiltered"],
        json!([report["liveRow"]["id"]]),
        "{report}"
    );
    let refused = &report["contextFilterRefused"];
    assert!(has(&refused["error"], "invalid_context_filter"), "{report}");
    assert_eq!(refused["invalid"], "true", "{report}");
    assert_eq!(refused["rows"], report["contextFiltered"], "{report}");
    assert!(has(&report["createdBefore2000"], "No tasks."), "{report}");
    assert_screenshots(
        &shots,
        &[
            "1-tasks",
            "2-failed",
            "3-complete",
            "4-template",
            "5-dead-letters",
            "6-zoomed-in",
            "7-zoomed-handler",
            "8-start-refused",
            "9-started",
            "10-live",
            "11-filtered",
        ],
    );

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_delays_and_signals_from_the_dashboard_in_a_real_browser() -> anyhow::Result<()> {
    let (script, chromium) = browser_script("time.mjs")?;
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let url = o.url();

    // A schedule of the fixture `linear` (its newest version), once a year: its next fire stays
    // the same while the browser looks at it.
    let (status, created) = post_json(
        &format!("{url}/v1/schedules"),
        json!({"namespace": "rust_examples", "name": "new-year", "template": "linear",
            "cron": "0 9 1 1 *", "timezone": "Europe/Paris", "context": {"value": 6}})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["paused"], false, "{created}");
    let next_fire = created["next_fire_at"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no next fire: {created}"))?
        .to_owned();

    // A template whose middle step waits (an hour at most) for the signal `approved`; `finish`
    // doubles the value of its payload.
    let (status, template) = post_json(
        &format!("{url}/v1/templates"),
        json!({"namespace": "rust_examples", "name": "approval", "version": "1.0.0",
        "description": "double, wait for approval, double the approved value",
        "steps": [
            {"name": "prepare", "handler": "double"},
            {"name": "approval", "depends_on": ["prepare"],
                "wait": {"signal": "approved", "timeout": "1h", "on_timeout": "fail"}},
            {"name": "finish", "handler": "double", "depends_on": ["approval"]}
        ]})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{template}");
    let waiting = o
        .client
        .create_task(&CreateTask::new("rust_examples", "approval").context(json!({"value": 6})))
        .await?;

    // And a task that starts in an hour.
    let (status, later) = post_json(
        &format!("{url}/v1/tasks"),
        json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 6},
            "delay": "1h"})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{later}");
    assert_eq!(later["state"], "scheduled", "{later}");
    let later_id = later["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no id: {later}"))?
        .to_owned();

    // And a task the retention purged: its page says so.
    let finished = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    let old = tasker::copy_finished_task(
        &env.config.database_url,
        finished.id,
        1,
        chrono::Duration::days(40),
    )
    .await?;
    let purged = o
        .client
        .purge(&tasker_client::PurgeRequest {
            older_than: "30d".into(),
            states: None,
            dry_run: false,
            limit: None,
        })
        .await?;
    assert_eq!(purged.tasks, 1, "{purged:?}");

    // And a dead letter (a message from nowhere), for the page to discard after asking.
    let mut kept = o.dead_letters_kept();
    let broker = tasker_broker::Broker::connect(
        &env.config.amqp_url,
        &env.config.queue_prefix,
        "dashboard-test",
    )
    .await?;
    broker
        .publisher()
        .await?
        .publish_all(&[tasker_broker::Outgoing {
            queue: tasker_broker::topology::dead_letter_queue(&env.config.queue_prefix),
            payload: br#"{"not": "a message anyone reads"}"#.to_vec(),
        }])
        .await?;
    let dead_letter = kept.take(1, Duration::from_secs(20)).await?[0];
    // And two more, for the page to discard by filter (their reason) as one operation.
    for n in 0..2 {
        let body = format!("junk {n}");
        tasker::letters::park(
            &env.config,
            body.as_bytes(),
            "junk: unreadable",
            Some("elsewhere"),
        )
        .await?;
    }
    let mut junk = kept.take(2, Duration::from_secs(20)).await?;
    junk.sort_unstable();

    let shots = target_dir().join("dashboard-screenshots");
    let note = "maintenance window until Monday";
    let (report, stderr) = run_browser(
        &script,
        &chromium,
        &shots,
        &[
            ("TASKER_URL", url.clone()),
            ("SCHEDULE", "rust_examples/new-year".to_owned()),
            ("SCHEDULED_TASK_ID", later_id.clone()),
            ("WAIT_TASK_ID", waiting.id.to_string()),
            ("WAIT_STEP", "approval".to_owned()),
            ("SIGNAL", "approved".to_owned()),
            ("PAUSE_NOTE", note.to_owned()),
            ("PURGED_TASK_ID", old[0].to_string()),
            ("DEAD_LETTER_ID", dead_letter.to_string()),
        ],
    )
    .await?;
    assert_clean(&report, &stderr, &shots, true);
    let has = |field: &Value, needle: &str| field.as_str().is_some_and(|s| s.contains(needle));

    // The purged task's page: what happened to it instead of an error.
    let gone = &report["purged"];
    assert!(has(&gone["text"], &old[0].to_string()), "{report}");
    assert!(has(&gone["text"], "(complete) was purged at"), "{report}");
    assert_eq!(gone["state"], "complete", "{report}");
    assert_eq!(gone["errorHidden"], true, "{report}");

    // The retention page: the policy (the defaults) and that purge, at the API's exact time.
    let retention = &report["retention"];
    let rows: Vec<&str> = retention["rows"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        rows.get(..6),
        Some(
            &[
                "Completed tasks kept 30d",
                "Failed tasks kept 90d",
                "Cancelled tasks kept 30d",
                "Purged ids answer 410 for 90d",
                "Audit log kept 90d",
                "Pace 200 tasks a batch, at most 5% of the time, every 60 s",
            ][..]
        ),
        "{report}"
    );
    assert!(
        rows.get(6)
            .is_some_and(|r| r.starts_with("Last purge ") && r.contains(" ago)")),
        "{report}"
    );
    let last = o.client.retention().await?.last_purged_at.expect("purged");
    let shown = retention["lastPurgedAt"].as_str().unwrap_or_default();
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(shown).ok(),
        Some(last.into()),
        "{report}"
    );
    assert_eq!(retention["navCurrent"], "page", "{report}");
    assert_eq!(retention["errorHidden"], true, "{report}");

    // The schedules list: the row with its next fire, exact and relative.
    let listed = &report["listed"];
    assert_eq!(listed["paused"], "false", "{report}");
    assert_eq!(listed["nextFireAt"], next_fire.as_str(), "{report}");
    assert!(has(&listed["nextFire"], " in "), "{report}");
    assert!(has(&listed["cron"], "0 9 1 1 *"), "{report}");
    assert!(has(&listed["cron"], "Europe/Paris"), "{report}");
    assert_eq!(listed["template"], "linear @newest", "{report}");

    // Trigger now opened the task it started, which ran.
    let triggered: uuid::Uuid = report["triggeredTaskId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no triggered task: {report}"))?
        .parse()?;
    assert!(
        has(&report["triggerNotice"], "rust_examples/new-year"),
        "{report}"
    );
    let task = o.wait(triggered).await?;
    assert_eq!(
        (
            task.namespace.as_str(),
            task.name.as_str(),
            task.state.as_str()
        ),
        ("rust_examples", "linear", "complete"),
        "{task:?}"
    );

    // Paused from the page, with its note: the row says so, and so does the API.
    let paused = &report["paused"];
    assert!(has(&paused["state"], "paused"), "{report}");
    assert!(has(&paused["state"], note), "{report}");
    assert!(has(&paused["notice"], "paused"), "{report}");
    assert_eq!(paused["resumeShown"], true, "{report}");
    let schedule = get_json(&format!("{url}/v1/schedules/rust_examples/new-year")).await?;
    assert_eq!(schedule["paused"], true, "{schedule}");
    assert_eq!(schedule["note"], note, "{schedule}");

    // Its own page.
    let detail = &report["detail"];
    assert_eq!(
        detail["hash"], "#/schedules/rust_examples/new-year",
        "{report}"
    );
    assert_eq!(detail["cron"], "0 9 1 1 *", "{report}");
    assert_eq!(
        detail["upcoming"],
        json!(schedule["upcoming"].as_array().map_or(0, Vec::len)),
        "{report}\n{schedule}"
    );
    assert!(has(&detail["text"], note), "{report}");

    // The delayed task, under the `scheduled` filter.
    assert!(has(&report["scheduledRow"], "starts in"), "{report}");
    assert_eq!(
        report["scheduledBadge"], "badge state-scheduled",
        "{report}"
    );

    // The waiting step, said in words and drawn as waiting; the form named its signal.
    let waiting_shown = &report["waiting"];
    assert!(
        has(&waiting_shown["text"], "waiting for signal approved until "),
        "{report}"
    );
    assert!(has(&waiting_shown["text"], "(in "), "{report}");
    assert!(
        has(&waiting_shown["text"], "— on timeout: fail"),
        "{report}"
    );
    assert_eq!(waiting_shown["dagKind"], "wait", "{report}");
    assert_eq!(waiting_shown["formShown"], true, "{report}");
    assert_eq!(waiting_shown["prefilled"], "approved", "{report}");
    // A name the API refuses: its error code and message were shown.
    assert!(has(&report["refusal"], "invalid_signal_name"), "{report}");

    // The signal sent from the form completed the step, and the task.
    let signalled = &report["signalled"];
    assert!(has(&signalled["notice"], "from-the-dashboard"), "{report}");
    assert_eq!(signalled["consumedBy"], "approval", "{report}");
    assert_eq!(signalled["formHidden"], true, "{report}");
    assert_eq!(signalled["errorHidden"], true, "{report}");
    assert_eq!(signalled["dagState"], "completed", "{report}");

    // The delayed task, cancelled from its page: asked first, "Keep it" sent nothing, the
    // confirmation cancelled it.
    let cancel = &report["cancel"];
    assert!(
        has(&cancel["asked"], &format!("Cancel task {later_id}?")),
        "{report}"
    );
    assert_eq!(
        (
            &cancel["keptPanelHidden"],
            &cancel["keptState"],
            &cancel["state"],
            &cancel["panelHidden"],
            &cancel["buttonHidden"]
        ),
        (
            &json!(true),
            &json!("scheduled"),
            &json!("cancelled"),
            &json!(true),
            &json!(true)
        ),
        "{report}"
    );
    let cancelled = get_json(&format!("{url}/v1/tasks/{later_id}")).await?;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");

    // The dead letter, discarded from its page: asked first ("Keep it" kept it), then gone.
    let discard = &report["discard"];
    assert!(
        has(
            &discard["asked"],
            &format!("Discard dead letter {dead_letter}?")
        ),
        "{report}"
    );
    assert_eq!(discard["keptStatus"], 200, "{report}");
    assert!(
        has(
            &discard["notice"],
            &format!("Dead letter {dead_letter} discarded.")
        ),
        "{report}"
    );
    let mut listed: Vec<i64> = discard["listed"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default();
    listed.sort_unstable();
    assert_eq!(listed, junk, "{report}");
    // The other two, by filter: counted, confirmed, discarded as one operation.
    let bulk = &report["bulk"];
    assert_eq!(bulk["filtered"], 2, "{report}");
    assert_eq!(bulk["matched"], 2, "{report}");
    assert_eq!(bulk["okLabel"], "Discard 2 dead letters", "{report}");
    assert_eq!(
        (&bulk["acted"], &bulk["after"]),
        (&json!(2), &json!(0)),
        "{report}"
    );
    let gone = reqwest::get(format!("{url}/v1/dead-letters/{dead_letter}")).await?;
    assert_eq!(gone.status(), 404);
    assert_screenshots(
        &shots,
        &[
            "t1-schedules",
            "t2-pause",
            "t3-schedule",
            "t4-scheduled",
            "t5-waiting",
            "t6-signalled",
            "t7-purged",
            "t8-retention",
            "t11-discard",
            "t9-cancel",
            "t10-cancelled",
        ],
    );

    // What the browser did, as the API records it: one signal (the refused one is not kept),
    // consumed by `approval`, whose result is its payload.
    let done = o.wait(waiting.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(
        done.result,
        Some(json!({"finish": {"value": 42}})),
        "{done:?}"
    );
    let steps = steps_by_name(&o.client, waiting.id).await?;
    assert_eq!(steps["approval"].result, Some(json!({"value": 21})));
    let signals = get_json(&format!("{url}/v1/tasks/{}/signals", waiting.id)).await?;
    let list = signals["signals"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 1, "{signals}");
    assert_eq!(
        (
            &list[0]["name"],
            &list[0]["signal_id"],
            &list[0]["payload"],
            &list[0]["consumed_by"]
        ),
        (
            &json!("approved"),
            &json!("from-the-dashboard"),
            &json!({"value": 21}),
            &json!("approval")
        ),
        "{signals}"
    );
    assert!(list[0]["consumed_at"].is_string(), "{signals}");

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

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

/// A template whose step holds a customer's slot while it waits a day for its rate token.
const METERED: &str = "namespace: rust_examples
name: dash_metered
version: '1.0.0'
concurrency: {key: /customer, limit: 2}
steps:
  - name: charge
    handler: double
    rate_limit: {key: dashboard-rate, limit: 1, per: 1d, burst: 1}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_steps_and_the_limits_page_in_a_real_browser() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    o.client.register_template(METERED, None, None).await?;
    let context = json!({"value": 6, "customer": "A"});
    // The first takes the day's only token; the second, high priority, waits for the next.
    let first = o
        .run_task("rust_examples", "dash_metered", context.clone())
        .await?;
    assert_eq!(first.state, "complete", "{first:?}");
    let second = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "dash_metered")
                .context(context)
                .priority(tasker_client::Priority::High),
        )
        .await?;
    o.until(
        Duration::from_secs(10),
        "the second charge throttled",
        || async {
            let s = steps_by_name(&o.client, second.id).await?;
            Ok((s["charge"].state == "throttled").then_some(()))
        },
    )
    .await?;
    let shots = screenshots();
    let report = clean_tour(
        "flow.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("THROTTLED_TASK_ID", second.id.to_string()),
            ("THROTTLED_STEP", "charge".to_owned()),
            ("THROTTLE_KEY", "dashboard-rate".to_owned()),
            ("THROTTLE_KIND", "rate".to_owned()),
            ("PRIORITY", "high".to_owned()),
            ("RATE_KEY", "dashboard-rate".to_owned()),
            ("CONCURRENCY_KEY", "rust_examples/dash_metered:A".to_owned()),
            ("PAUSE_NOTE", "429 from the provider".to_owned()),
        ],
    )
    .await?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    assert!(
        text(&report["throttled"]["text"]).contains("rate limit dashboard-rate"),
        "{report}"
    );
    assert!(
        text(&report["throttled"]["limits"]).contains("rust_examples/dash_metered:A"),
        "{report}"
    );
    assert_eq!(report["throttled"]["priority"], "high priority", "{report}");
    assert_eq!(report["listed"]["priority"], "high", "{report}");
    assert_eq!(report["concurrency"]["inUse"], "1 / 2", "{report}");
    assert_eq!(
        report["dialogs"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["dismissed"]["paused"], "false", "{report}");
    assert!(
        text(&report["paused"]["state"]).contains("429 from the provider"),
        "{report}"
    );
    // The page's pause and resume reached the server: the key is no longer paused.
    let rate = o.client.rate_limits().await?;
    let key = rate
        .iter()
        .find(|r| r.key == "dashboard-rate")
        .expect("listed");
    assert_eq!(key.paused_until, None, "{key:?}");
    assert_screenshots(
        &shots,
        &[
            "f1-throttled",
            "f2-limits",
            "f3-pause",
            "f4-paused",
            "f5-resumed",
        ],
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// A two-step template of `namespace` on the Rust fixture handlers.
fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// Eight requests that change something, audited: a template, a task and its cancel in each of
/// `dash_a` and `dash_b` (as `root`), a purge without a token (401) and a revoke of no token
/// (404). Returns the two tasks, once every row is written.
async fn audited_requests(
    o: &tasker::RunningOrchestrator,
    root: &tasker_client::Client,
    root_token: &str,
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let mut tasks = Vec::new();
    for ns in ["dash_a", "dash_b"] {
        root.register_template(&pair(ns), None, None).await?;
        let task = root
            .create_task(&CreateTask::new(ns, "pair").context(json!({"value": 1})))
            .await?;
        root.cancel(task.id).await?;
        tasks.push(task.id);
    }
    let http = reqwest::Client::new();
    let purge = http.post(format!("{}/v1/purge", o.url())).send().await?;
    assert_eq!(purge.status(), 401);
    let revoke = http
        .delete(format!("{}/v1/tokens/nobody", o.url()))
        .bearer_auth(root_token)
        .send()
        .await?;
    assert_eq!(revoke.status(), 404);
    let mut written = o.shared.audit.written();
    tokio::time::timeout(Duration::from_secs(10), written.wait_for(|n| *n >= 8)).await??;
    Ok(tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_page_in_a_real_browser() -> anyhow::Result<()> {
    use tasker_orchestration::store::{NewToken, Scope, Store};
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let dash_a = tasker_shared::namespaces::Patterns::parse("dash_a")?;
    let mut tokens = Vec::new();
    for (name, namespaces) in [("root", None), ("admin-a", Some(&dash_a))] {
        let new = NewToken {
            name,
            scope: Scope::Admin,
            namespaces,
            expires_at: None,
            created_by: None,
            minter: None,
        };
        tokens.push(store.create_token(&new).await?.token);
    }
    let o = env.orchestrator().await?;
    let root = tasker_client::Client::with_token(&o.url(), Some(&tokens[0]));
    let tasks = audited_requests(&o, &root, &tokens[0]).await?;

    let shots = screenshots();
    let report = clean_tour(
        "audit.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("ROOT_TOKEN", tokens[0].clone()),
            ("SCOPED_TOKEN", tokens[1].clone()),
            ("SCOPED_NAMESPACE", "dash_a".to_owned()),
            ("OTHER_NAMESPACE", "dash_b".to_owned()),
        ],
    )
    .await?;
    let rows = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    // Every row the API has, newest first, as the page shows them.
    let api = root.audit(&tasker_client::AuditQuery::default()).await?;
    let ids: Vec<i64> = rows("all")
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    assert_eq!(ids, api.entries.iter().map(|e| e.id).collect::<Vec<_>>());
    assert_eq!(ids.len(), 8, "{report}");
    let refused = rows("all")
        .into_iter()
        .find(|r| r["route"] == "/v1/purge")
        .expect("the refused purge is listed");
    assert_eq!(
        (
            &refused["status"],
            &refused["refusedMark"],
            &refused["token"]
        ),
        (&json!(401), &json!(true), &json!("none")),
        "{report}"
    );
    let cancel_b = rows("all")
        .into_iter()
        .find(|r| r["route"] == "/v1/tasks/{id}/cancel" && r["namespaces"] == "dash_b")
        .expect("b's cancel is listed");
    assert_eq!(cancel_b["taskHref"], format!("#/tasks/{}", tasks[1]));
    assert_eq!(cancel_b["token"], "root");
    assert_eq!(report["navCurrent"], "page", "{report}");
    // Filtered on b: its template, task and cancel; on DELETE: the revoke.
    assert_eq!(rows("filtered").len(), 3, "{report}");
    let deletes = rows("deletes");
    assert_eq!(deletes.len(), 1, "{report}");
    assert_eq!(deletes[0]["request"], "DELETE /v1/tokens/{name}");
    assert!(
        deletes[0]["targets"]
            .as_str()
            .is_some_and(|t| t.contains("token nobody")),
        "{report}"
    );
    assert_eq!(report["retention"], "kept 90d", "{report}");
    // The admin of dash_a: a's three rows only.
    let scoped = rows("scoped");
    assert_eq!(scoped.len(), 3, "{report}");
    assert!(
        scoped.iter().all(|r| r["namespaces"] == "dash_a"),
        "{report}"
    );
    assert_screenshots(&shots, &["a1-audit", "a2-namespace", "a3-scoped"]);
    o.stop().await;
    env.cleanup().await
}
