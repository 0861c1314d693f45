//! A dead alert sink (`TASKER_BENCH_FILTER=dead_sink`): the `linear` chain's latency and
//! throughput (closed loop, 1 and 8 clients) before, while and after 200 firing alert rules send
//! their notices to a sink that accepts connections and never answers — each try held for the
//! whole `[alerts] timeout_ms` (5 s), 64 at a time, tried again and again — in the same run. The
//! rules watch a namespace of their own (a step no worker serves), so only the sink's weight
//! can reach the chain.

use tasker::black_hole::BlackHole;
use tasker_client::{AlertCondition, AlertKind, AlertSink, PutAlert};

use super::*;

/// Rules sending to the dead sink.
const RULES: usize = 200;

const STUCK: &str = "namespace: bench_dead
name: stuck
version: '1'
steps:
  - name: wait
    handler: nobody_serves_this
";

fn rule(url: &str) -> PutAlert {
    PutAlert {
        namespace: "bench_dead".into(),
        when: AlertCondition {
            kind: AlertKind::StepsWaiting,
            template: None,
            schedule: None,
            count: None,
            within: None,
            longer_than: Some("1s".into()),
        },
        sink: AlertSink::Webhook { url: url.into() },
        secret: None,
        suppress: Some("1h".into()),
    }
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

async fn measure(stack: &Arc<Stack>, w: Window) -> anyhow::Result<Value> {
    let tasks = Arc::new(Tasks {
        stack: stack.clone(),
        sc: scenario("linear_rust", "rust", "linear", json!({"value": 6}), 4),
    });
    for _ in 0..10 {
        tasks.one().await?;
    }
    let before = levels(&tasks, "sink idle", w).await;

    let mut sink = BlackHole::start().await?;
    let client = &stack.client;
    client
        .register_template(STUCK, Some("stuck.yaml"), Some("bench"))
        .await?;
    let stuck = client
        .create_task(&CreateTask::new("bench_dead", "stuck"))
        .await?;
    for i in 0..RULES {
        client
            .put_alert(&format!("dead-{i}"), &rule(&sink.url))
            .await?;
    }
    // The sink is busy once every place of the sender holds one of its notices.
    sink.until(64, Duration::from_secs(60)).await?;
    let first = sink.accepted();
    let during = levels(&tasks, "sink dead", w).await;
    let tries = sink.accepted() - first;

    for i in 0..RULES {
        client.delete_alert(&format!("dead-{i}")).await?;
    }
    client.cancel(stuck.id).await?;
    let after = levels(&tasks, "rules removed", w).await;
    println!("dead sink: {RULES} rules firing, {tries} tries held by the sink while measured");
    Ok(json!({
        "rules": RULES, "tries_held_while_measured": tries,
        "sink_idle": before, "sink_dead": during, "after": after,
    }))
}

pub(super) async fn run(stack: &Arc<Stack>, w: Window) -> Value {
    measure(stack, w)
        .await
        .unwrap_or_else(|e| json!({"failed": format!("{e:#}")}))
}
