//! The Rust binaries' logs: text lines by default, one JSON object a line with
//! `TASKER_LOG_FORMAT=json` (the event's fields at the top level, for a log collector).
//! A graceful stop (SIGTERM) ends with its own line and logs no error; an access log when asked;
//! an unreachable OTLP collector is a warning and a counter, not silence.
//! (Workers embedded in Ruby, Python and Node hand their records to the host's logger instead;
//! each binding's suite checks that.)

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

use tasker::{TestEnv, templates, workspace_binary};

/// Starts `binary` with `args` against the test's services, its stderr piped (logs at `info`,
/// without colour; `envs` adds to its environment), and returns it with its stderr lines.
fn spawn_logging(
    env: &TestEnv,
    binary: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> anyhow::Result<(Child, Lines<BufReader<ChildStderr>>)> {
    let cfg = &env.config;
    let mut child = Command::new(workspace_binary(binary)?)
        .args(args)
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("TASKER_ORCHESTRATOR__AUTH", "off")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .envs(envs.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    Ok((child, lines))
}

/// The orchestrator's stderr line that says it listens, with `TASKER_LOG_FORMAT` as given.
async fn listening_line(env: &TestEnv, format: &str) -> anyhow::Result<String> {
    let rust = templates("rust");
    let args = [
        "--bind",
        "127.0.0.1:0",
        "--templates",
        rust.to_str().context("a UTF-8 path")?,
    ];
    let (mut child, mut lines) = spawn_logging(
        env,
        "tasker-orchestrator",
        &args,
        &[("TASKER_LOG_FORMAT", format)],
    )?;
    let line = tasker::line_containing(
        &mut lines,
        "tasker-orchestrator listening",
        Duration::from_secs(60),
        "the orchestrator",
    )
    .await?;
    child.start_kill()?;
    child.wait().await?;
    Ok(line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_binaries_log_json_lines_when_asked_and_text_otherwise() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let json = listening_line(&env, "json").await?;
    let event: Value =
        serde_json::from_str(&json).with_context(|| format!("not a JSON line: {json}"))?;
    assert_eq!(event["level"], "INFO", "{event}");
    assert_eq!(event["message"], "tasker-orchestrator listening", "{event}");
    assert_eq!(
        event["scheme"], "http",
        "the event's fields at the top: {event}"
    );
    assert!(
        event["bind"]
            .as_str()
            .is_some_and(|b| b.starts_with("127.0.0.1:") && !b.ends_with(":0")),
        "the address bound, not the one asked for: {event}"
    );
    assert!(event["timestamp"].is_string(), "{event}");
    assert!(
        event["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("tasker_orchestrator")),
        "{event}"
    );

    let text = listening_line(&env, "text").await?;
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
    assert!(
        text.contains(" INFO ") && text.contains("scheme="),
        "{text}"
    );
    env.cleanup().await
}

/// Starts `binary` with `args`, waits for `up` on its stderr, sends SIGTERM and returns its exit
/// status and every stderr line it printed after `up`.
async fn stop_gracefully(
    env: &TestEnv,
    binary: &str,
    args: &[&str],
    up: &str,
) -> anyhow::Result<(std::process::ExitStatus, Vec<String>)> {
    let (mut child, mut lines) = spawn_logging(
        env,
        binary,
        args,
        &[("TASKER_WORKER__REGISTER_TEMPLATES", "false")],
    )?;
    tasker::line_containing(&mut lines, up, Duration::from_secs(60), binary).await?;
    let pid = child.id().context("the pid")?;
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    assert!(signalled.success());
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        let mut rest = Vec::new();
        while let Some(line) = lines.next_line().await? {
            rest.push(line);
        }
        anyhow::Ok(rest)
    })
    .await
    .with_context(|| format!("{binary} did not stop within 30 s of SIGTERM"))??;
    Ok((child.wait().await?, rest))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_binaries_stop_on_sigterm_with_a_last_line_and_no_error() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let rust = templates("rust");
    let rust = rust.to_str().context("a UTF-8 path")?;
    // The worker's orchestrator, named: the default URL may be another one's (the demo's).
    let o = env.orchestrator().await?;
    let url = o.url();
    let stops = [
        (
            "tasker-orchestrator",
            vec!["--bind", "127.0.0.1:0", "--templates", rust],
            "connected to the broker",
            "tasker-orchestrator stopped",
        ),
        (
            "tasker-worker-rust",
            vec![
                "--templates",
                rust,
                "--health-port",
                "0",
                "--orchestrator-url",
                &url,
            ],
            "worker consuming",
            "tasker worker stopped",
        ),
    ];
    for (binary, args, up, last) in stops {
        let (status, rest) = stop_gracefully(&env, binary, &args, up).await?;
        assert!(status.success(), "{binary}: exit {status}: {rest:#?}");
        assert!(
            rest.last().is_some_and(|l| l.contains(last)),
            "{binary} ends with {last:?}: {rest:#?}"
        );
        assert!(
            !rest.iter().any(|l| l.contains("ERROR")),
            "{binary} logged an error while stopping: {rest:#?}"
        );
    }
    o.stop().await;
    env.cleanup().await
}

/// The orchestrator's stderr lines until it says `up`, started with `amqp_url` as its broker.
async fn lines_until(env: &TestEnv, amqp_url: &str, up: &str) -> anyhow::Result<Vec<String>> {
    let (mut child, mut lines) = spawn_logging(
        env,
        "tasker-orchestrator",
        &["--bind", "127.0.0.1:0"],
        &[("AMQP_URL", amqp_url)],
    )?;
    let seen = tokio::time::timeout(Duration::from_secs(60), async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await? {
            let done = line.contains(up);
            seen.push(line);
            if done {
                return anyhow::Ok(seen);
            }
        }
        anyhow::bail!("the orchestrator exited before {up:?}: {seen:#?}")
    })
    .await
    .with_context(|| format!("the orchestrator did not log {up:?} within 60 s"))??;
    child.start_kill()?;
    child.wait().await?;
    Ok(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orchestrator_warns_when_its_broker_user_is_guest() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let warning = "the orchestrator's broker user is `guest`";
    // The services' own URL logs in as guest.
    assert_eq!(tasker_broker::user_of(&env.config.amqp_url), "guest");
    let guest = lines_until(&env, &env.config.amqp_url, "connected to the broker").await?;
    assert!(
        guest
            .iter()
            .any(|l| l.contains(warning) && l.contains("WARN")),
        "{guest:#?}"
    );
    // A user of its own, as the demo and cluster mode make it: no warning, and it may do all an
    // orchestrator does at start (declare its queues, consume results and dead letters).
    let (_, own) = env.orchestrator_user()?;
    let lines = lines_until(&env, &own, "connected to the broker").await?;
    assert!(!lines.iter().any(|l| l.contains(warning)), "{lines:#?}");
    env.cleanup().await
}

/// An orchestrator logging JSON lines with `envs` added, once it listens: it, its stderr lines
/// and its URL.
async fn json_orchestrator(
    env: &TestEnv,
    envs: &[(&str, &str)],
) -> anyhow::Result<(Child, Lines<BufReader<ChildStderr>>, String)> {
    let rust = templates("rust");
    let args = [
        "--bind",
        "127.0.0.1:0",
        "--templates",
        rust.to_str().context("a UTF-8 path")?,
    ];
    let mut all = vec![("TASKER_LOG_FORMAT", "json")];
    all.extend_from_slice(envs);
    let (child, mut lines) = spawn_logging(env, "tasker-orchestrator", &args, &all)?;
    let listening = tasker::line_containing(
        &mut lines,
        "tasker-orchestrator listening",
        Duration::from_secs(60),
        "the orchestrator",
    )
    .await?;
    let bind: Value = serde_json::from_str(&listening)?;
    let url = format!("http://{}", bind["bind"].as_str().unwrap_or_default());
    Ok((child, lines, url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_access_log_has_a_line_per_answer_when_asked() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let (mut child, mut lines, url) =
        json_orchestrator(&env, &[("TASKER_ORCHESTRATOR__ACCESS_LOG", "true")]).await?;
    let answer = reqwest::get(format!("{url}/v1/tasks/not-an-id?wait=1")).await?;
    assert_eq!(answer.status(), 400);
    let line = tasker::line_containing(
        &mut lines,
        "tasker_orchestration::access",
        Duration::from_secs(10),
        "the access log",
    )
    .await?;
    let event: Value = serde_json::from_str(&line)?;
    assert_eq!(
        (
            &event["method"],
            &event["path"],
            &event["route"],
            &event["status"]
        ),
        (
            &Value::from("GET"),
            &Value::from("/v1/tasks/not-an-id"),
            &Value::from("/v1/tasks/{id}"),
            &Value::from(400)
        ),
        "{event}"
    );
    assert!(
        event["peer"]
            .as_str()
            .is_some_and(|p| p.starts_with("127.0.0.1:")),
        "{event}"
    );
    assert!(event["ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{event}");
    child.start_kill()?;
    child.wait().await?;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_otlp_collector_is_logged_and_counted() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    // A port nothing listens on: bound, then let go.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let endpoint = format!("http://{dead}");
    let (mut child, mut lines, url) =
        json_orchestrator(&env, &[("TASKER_TELEMETRY__OTLP_ENDPOINT", &endpoint)]).await?;
    // A task's creation is a span to export.
    let client = tasker_client::Client::new(&url);
    client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "linear")
                .context(serde_json::json!({"value": 1})),
        )
        .await?;
    let warning = tasker::line_containing(
        &mut lines,
        "exporting spans over OTLP failed",
        Duration::from_secs(30),
        "the orchestrator",
    )
    .await?;
    let event: Value = serde_json::from_str(&warning)?;
    assert_eq!(event["level"], "WARN", "{event}");
    assert!(event["spans"].as_u64().is_some_and(|n| n >= 1), "{event}");
    let page = reqwest::get(format!("{url}/metrics")).await?.text().await?;
    let errors = tasker::scrape::sample(&page, "tasker_otlp_export_errors_total");
    assert!(errors.is_some_and(|n| n >= 1.0), "{page}");
    assert!(
        page.contains("# HELP tasker_otlp_spans_dropped_total"),
        "described: {page}"
    );
    child.start_kill()?;
    child.wait().await?;
    env.cleanup().await
}

#[path = "logs/families.rs"]
mod families;
