//! A dead alert sink (`TASKER_BENCH_FILTER=dead_sink`): the `linear` chain's latency and
//! throughput (closed loop, 1 and 8 clients) in four phases of one run — no alert rule; 200
//! firing rules whose sink answers (their notices delivered: what remains is checking them
//! every second); the same 200 rules with a sink that accepts connections and never answers
//! (each try held for the whole `[alerts] timeout_ms`, 5 s, 64 at a time, tried again and
//! again); the rules removed. The rules watch a namespace of their own (a step no worker
//! serves), so the second phase against the third is the dead sink's own weight.

use std::sync::atomic::{AtomicUsize, Ordering};

use tasker::black_hole::{BlackHole, waiting_rule};

use super::*;

/// Firing rules.
const RULES: usize = 200;

const STUCK: &str = "namespace: bench_dead
name: stuck
version: '1'
steps:
  - name: wait
    handler: nobody_serves_this
";

/// A sink that answers 200 to every notice, counting them.
async fn answering() -> anyhow::Result<(String, Arc<AtomicUsize>)> {
    let received = Arc::new(AtomicUsize::new(0));
    let count = received.clone();
    // A stand-in for a receiving service, not an API of Tasker's: nothing to document.
    #[allow(clippy::disallowed_methods)]
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, received))
}

/// The chain at 1 and 8 clients.
async fn levels(tasks: &Arc<Tasks>, label: &str, w: Window) -> Value {
    let mut out = Vec::new();
    for c in [1, 8] {
        let l = closed_loop(tasks, c, w).await;
        print_level(&format!("linear_rust c={c} {label}"), &l);
        out.push(json!(l));
    }
    json!(out)
}

/// Saves the rules with sink `url` (a fresh name each `round`), then waits until `done` says
/// their notices are under way.
async fn fire(
    client: &Client,
    round: &str,
    url: &str,
    done: impl AsyncFn() -> bool,
) -> anyhow::Result<()> {
    for i in 0..RULES {
        client
            .put_alert(&format!("{round}-{i}"), &waiting_rule("bench_dead", url))
            .await?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done().await {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{round}: notices not under way in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn remove(client: &Client, round: &str) -> anyhow::Result<()> {
    for i in 0..RULES {
        client.delete_alert(&format!("{round}-{i}")).await?;
    }
    Ok(())
}

async fn measure(stack: &Arc<Stack>, w: Window) -> anyhow::Result<Value> {
    let tasks = Tasks::linear_rust(stack);
    for _ in 0..10 {
        tasks.one().await?;
    }
    let none = levels(&tasks, "no rules", w).await;

    let client = &stack.client;
    client
        .register_template(STUCK, Some("stuck.yaml"), Some("bench"))
        .await?;
    let stuck = client
        .create_task(&CreateTask::new("bench_dead", "stuck"))
        .await?;
    // Every notice delivered: what remains is the rules' checks.
    let (url, delivered) = answering().await?;
    fire(client, "live", &url, async || {
        delivered.load(Ordering::Relaxed) >= RULES
    })
    .await?;
    let live = levels(&tasks, "200 rules, sink answers", w).await;
    remove(client, "live").await?;

    // The same rules telling a sink that never answers: every place of the sender holds one.
    let hole = BlackHole::start().await?;
    fire(client, "dead", &hole.url, async || hole.accepted() >= 64).await?;
    let first = hole.accepted();
    let dead = levels(&tasks, "200 rules, sink dead", w).await;
    let tries = hole.accepted() - first;
    remove(client, "dead").await?;
    client.cancel(stuck.id).await?;
    let after = levels(&tasks, "rules removed", w).await;
    println!("dead sink: {RULES} rules firing, {tries} tries held by the sink while measured");
    Ok(json!({
        "rules": RULES, "tries_held_while_measured": tries, "no_rules": none,
        "sink_answers": live, "sink_dead": dead, "after": after,
    }))
}

pub(super) async fn run(stack: &Arc<Stack>, w: Window) -> Value {
    measure(stack, w)
        .await
        .unwrap_or_else(|e| json!({"failed": format!("{e:#}")}))
}
