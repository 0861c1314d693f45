//! What a request may cost, bounded before it is spent: a template that would take minutes to
//! parse is refused at once (through the API and the CLI); connections that say nothing are
//! closed within the header timeout; a thousand event streams on one task cost the database
//! what one does.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;
use tasker::{RunningOrchestrator, TestEnv, workspace_binary};
use tasker_client::CreateTask;
use uuid::Uuid;

use super::raw;

/// 1 MiB of nesting (brackets, maps, and maps behind a stray quote) and of aliases: what took
/// libyaml minutes.
fn expensive_templates() -> Vec<(&'static str, String)> {
    const MIB: usize = 1024 * 1024;
    let mut aliases = String::from("namespace: x\nname: y\nversion: '1'\na: &a [1]\nsteps:\n");
    while aliases.len() < MIB - 16 {
        aliases.push_str("  - *a\n");
    }
    // One stray quote in a plain scalar hid the rest of the text from the old pre-scan.
    let stray = format!(
        "namespace: x\nname: y\nversion: '1'\ndescription: a \"\nsteps: {}",
        "{a: ".repeat((MIB - 64) / 4)
    );
    vec![
        ("brackets", format!("steps: {}", "[".repeat(MIB - 8))),
        ("maps", format!("steps: {}", "{a: ".repeat((MIB - 8) / 4))),
        ("aliases", aliases),
        ("stray_quote", stray),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_would_cost_minutes_to_parse_is_refused_at_once() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.max_body_bytes = 2 * 1024 * 1024;
    let o = env.orchestrator().await?;
    let dir = std::env::temp_dir().join(format!("tasker-trust-{}", Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    for (what, text) in expensive_templates() {
        let started = Instant::now();
        let (status, answer) = raw(
            &o,
            Method::POST,
            "/v1/templates",
            &[("content-type", "application/yaml")],
            &text,
        )
        .await;
        let api = started.elapsed();
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_template")),
            "{what}: {answer}"
        );
        // The same file through the CLI, offline.
        let file = dir.join(format!("{what}.yaml"));
        std::fs::write(&file, &text)?;
        let started = Instant::now();
        let validated = std::process::Command::new(workspace_binary("tasker")?)
            .args(["templates", "validate"])
            .arg(&file)
            .output()?;
        let cli = started.elapsed();
        assert!(!validated.status.success(), "{what}: the CLI accepted it");
        let said = String::from_utf8_lossy(&validated.stderr).into_owned()
            + &String::from_utf8_lossy(&validated.stdout);
        assert!(said.contains(&format!("{what}.yaml:")), "{what}: {said}");
        println!("{what}: refused in {api:?} through the API, {cli:?} through the CLI");
        // A bound far above the figure, so the test says "not minutes" without timing the
        // machine: the figure itself is printed above.
        assert!(
            api < Duration::from_secs(5) && cli < Duration::from_secs(5),
            "{what}"
        );
    }
    std::fs::remove_dir_all(&dir)?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_say_nothing_are_closed_within_the_header_timeout() -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.header_timeout_ms = 1_000;
    let o = env.orchestrator().await?;
    let started = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(tokio::net::TcpStream::connect(o.addr).await?);
    }
    // A request on its own connection is answered meanwhile.
    assert_eq!(
        reqwest::get(format!("{}/health", o.url())).await?.status(),
        StatusCode::OK
    );
    let closes = silent.into_iter().map(|mut s| async move {
        let mut buf = [0u8; 64];
        // The server closes it: end of stream (or a reset), never data.
        matches!(s.read(&mut buf).await, Ok(0) | Err(_))
    });
    let closed = tokio::time::timeout(
        Duration::from_secs(20),
        futures_util::future::join_all(closes),
    )
    .await
    .expect("every silent connection closed within 20 s");
    assert!(closed.iter().all(|c| *c), "a silent connection got data");
    println!(
        "300 silent connections closed {:?} after opening (header timeout 1 s)",
        started.elapsed()
    );
    o.stop().await;
    env.cleanup().await
}

/// Transactions PostgreSQL committed in the test's database so far.
async fn transactions(o: &RunningOrchestrator) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database
         WHERE datname = current_database()",
    )
    .fetch_one(o.shared.store.pool())
    .await?)
}

/// Transactions per second over `window`.
async fn rate(o: &RunningOrchestrator, window: Duration) -> anyhow::Result<f64> {
    // Statistics reach pg_stat_database about once a second.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let before = transactions(o).await?;
    tokio::time::sleep(window).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let after = transactions(o).await?;
    Ok((after - before) as f64 / window.as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_event_streams_on_one_task_cost_the_database_what_one_does() -> anyhow::Result<()>
{
    let mut env = TestEnv::new().await?;
    // Every stream comes from this one address.
    env.config.orchestrator.max_connections_per_peer = 2_048;
    let o = env.orchestrator().await?;
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 1})))
        .await?;
    let window = Duration::from_secs(5);
    let idle = rate(&o, window).await?;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/tasks/{}/events", o.url(), task.id);
    let mut streams = Vec::new();
    for _ in 0..1_000 {
        let resp = client.get(&url).send().await?;
        assert_eq!(resp.status(), StatusCode::OK);
        streams.push(resp);
    }
    // Every stream got its first snapshot.
    for s in &mut streams {
        let first = tokio::time::timeout(Duration::from_secs(20), s.chunk())
            .await??
            .expect("a snapshot");
        assert!(String::from_utf8_lossy(&first).contains("event: snapshot"));
    }
    assert_eq!(o.shared.live.open(), 1_000);
    let watched = rate(&o, window).await?;
    println!("transactions/s: idle {idle:.1}, with 1,000 event streams {watched:.1}");
    assert!(
        watched <= 2.0 * idle.max(1.0),
        "1,000 streams: {watched:.1} transactions/s against {idle:.1} idle"
    );
    drop(streams);
    o.stop().await;
    env.cleanup().await
}
