//! Each language's client (`workers/<language>/conformance-client`) reads child links, a child
//! step, the workers registry and the limits as the Rust client does, pauses and resumes a rate
//! key, creates tasks in bulk and counts a purge.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv, repo_root, steps_by_name};

use crate::common::start_worker;
use crate::conformance_client;

/// What a client must read of a parent task with one child, the child, the parent's child step
/// and the workers, as `conformance-client URL composition PARENT` prints it: computed here
/// with the Rust client, compared with what each language's client read.
async fn composition_view(
    client: &tasker_client::Client,
    parent: uuid::Uuid,
) -> anyhow::Result<Value> {
    let task = client.task(parent, None).await?;
    let children = task.children.clone().unwrap_or_default();
    let first = children.first().context("the parent has no child")?;
    let child = client.task(first.task_id, None).await?;
    let listed = client
        .tasks(&tasker_client::TaskQuery {
            parent: Some(parent),
            ..Default::default()
        })
        .await?;
    let kid = steps_by_name(client, parent)
        .await?
        .remove("kid")
        .context("no kid step")?;
    let mut workers: Vec<Value> = client
        .workers(false)
        .await?
        .into_iter()
        .map(|w| {
            serde_json::json!({"name": w.name, "language": w.language, "live": w.live,
                               "namespaces": w.namespaces, "handlers": w.handlers})
        })
        .collect();
    workers.sort_by_key(|w| w["name"].as_str().unwrap_or_default().to_owned());
    Ok(serde_json::json!({
        "parent": {"id": task.id, "depth": task.depth, "children": children},
        "child": {"id": child.id, "parent_task_id": child.parent_task_id,
                  "parent_step_id": child.parent_step_id, "depth": child.depth,
                  "state": child.state},
        "listed": listed.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        "kid": {"step_type": kid.step_type, "namespace": kid.namespace, "unserved": kid.unserved,
                "child": kid.child},
        "workers": workers,
    }))
}

/// Each language's client reads child links, a child step and the workers registry as the Rust
/// client does (the contract those fields are checked against, on a real orchestrator).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_reads_children_and_workers() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        tasker::templates("rust"),
        repo_root().join("tests/fixtures/task_templates/composition"),
    ];
    let o = env.orchestrator().await?;
    let mut worker = start_worker(&env, "rust", "rust-worker", &o.url()).await?;
    o.until(Duration::from_secs(20), "the worker registered", || async {
        Ok((!o.client.workers(false).await?.is_empty()).then_some(()))
    })
    .await?;
    let parent = o
        .run_task(
            "rust_examples",
            "family",
            serde_json::json!({"value": 1, "sleep_ms": 0}),
        )
        .await?;
    assert_eq!(parent.state, "complete", "{parent:?}");
    let expected = composition_view(&o.client, parent.id).await?;
    assert_eq!(expected["child"]["depth"], 1, "{expected}");
    for language in ["python", "ruby", "typescript"] {
        let out = conformance_client(
            language,
            &[o.url(), "composition".into(), parent.id.to_string()],
        )
        .await?;
        let read: Value =
            serde_json::from_str(&out).with_context(|| format!("{language} printed: {out}"))?;
        // Who is listed and what they serve, not when they were last seen (a heartbeat moves
        // that between two reads).
        assert_eq!(read, expected, "{language}'s client read otherwise");
    }
    every_client_reads_and_pauses_limits(&o).await?;
    every_client_creates_in_bulk_and_counts_a_purge(&o).await?;
    worker.child.kill().await?;
    o.stop().await;
    env.cleanup().await
}

/// A template whose step claims a concurrency slot and a token of the rate key the clients'
/// `flow` mode pauses.
const LIMITED: &str = "namespace: rust_examples
name: conformance_limits
version: '1.0.0'
concurrency: {key: /customer, limit: 3}
steps:
  - name: charge
    handler: double
    rate_limit: {key: conformance-flow, limit: 50, per: 1s, burst: 5}
";

/// The fields of the limits a client must read as the Rust client does (times compared as
/// instants: each language writes its own precision).
fn limits_view(rates: &Value, slots: &Value) -> Value {
    let instant = |v: &Value| {
        v.as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_micros())
    };
    let rates: Vec<Value> = rates
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            serde_json::json!({"key": r["key"], "limit": r["limit"], "per_ms": r["per_ms"],
                               "burst": r["burst"], "pause_note": r["pause_note"],
                               "paused_until": instant(&r["paused_until"]),
                               "throttled": r["throttled"]})
        })
        .collect();
    let slots: Vec<Value> = slots
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            serde_json::json!({"key": c["key"], "limit": c["limit"], "in_use": c["in_use"],
                               "throttled": c["throttled"]})
        })
        .collect();
    serde_json::json!({"rate": rates, "concurrency": slots})
}

/// Each language's client reads the rate and concurrency keys as the Rust client does, and
/// pauses and resumes a rate key (`conformance-client URL flow`).
async fn every_client_reads_and_pauses_limits(o: &RunningOrchestrator) -> anyhow::Result<()> {
    o.client.register_template(LIMITED, None, None).await?;
    let task = o
        .run_task(
            "rust_examples",
            "conformance_limits",
            serde_json::json!({"value": 2, "customer": "c-1"}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    for language in ["python", "ruby", "typescript"] {
        let mut rates = serde_json::to_value(o.client.rate_limits().await?)?;
        let mut slots = serde_json::to_value(o.client.concurrency_limits(None).await?)?;
        for list in [&mut rates, &mut slots] {
            if let Some(a) = list.as_array_mut() {
                a.sort_by_key(|v| v["key"].as_str().unwrap_or_default().to_owned());
            }
        }
        let expected = limits_view(&rates, &slots);
        let stdout = conformance_client(language, &[o.url(), "flow".into()]).await?;
        let mut lines = std::collections::BTreeMap::new();
        for line in stdout.lines() {
            let (label, json) = line
                .split_once(' ')
                .with_context(|| format!("{language} printed {line:?}"))?;
            lines.insert(label.to_owned(), serde_json::from_str::<Value>(json)?);
        }
        let read = limits_view(&lines["rate_limits"], &lines["concurrency_limits"]);
        assert_eq!(
            read, expected,
            "{language}'s client read the limits otherwise"
        );
        let paused = &lines["paused"];
        assert_eq!(paused["key"], "conformance-flow", "{language}: {paused}");
        assert_eq!(paused["pause_note"], "conformance", "{language}: {paused}");
        let until = chrono::DateTime::parse_from_rfc3339(paused["paused_until"].as_str().unwrap())?;
        let ahead = until.with_timezone(&chrono::Utc) - chrono::Utc::now();
        assert!(
            (58..=61).contains(&ahead.num_minutes()),
            "{language}: paused {ahead} ahead"
        );
        let resumed = &lines["resumed"];
        assert_eq!(resumed["key"], "conformance-flow", "{language}: {resumed}");
        assert!(resumed["paused_until"].is_null(), "{language}: {resumed}");
        assert!(resumed["pause_note"].is_null(), "{language}: {resumed}");
    }
    Ok(())
}

/// Each language's client sends a batch of three (two tasks, one of a template that does not
/// exist) twice: created then existing, the third refused both times with its code; then a
/// dry-run purge, and the retention policy (the defaults). The tasks are the ones the Rust
/// client sees under those keys.
async fn every_client_creates_in_bulk_and_counts_a_purge(
    o: &RunningOrchestrator,
) -> anyhow::Result<()> {
    for language in ["python", "ruby", "typescript"] {
        let prefix = format!("conformance-scale-{language}");
        let args = [
            o.url(),
            "scale".into(),
            "rust_examples".into(),
            "linear".into(),
            r#"{"value": 3}"#.into(),
            prefix.clone(),
        ];
        let stdout = conformance_client(language, &args).await?;
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines,
            [
                r#"first ["created","created","refused:unknown_template"]"#,
                r#"second ["existing","existing","refused:unknown_template"]"#,
                r#"purge {"dry_run":true,"states":["complete"],"more":false,"rows":null}"#,
                r#"retention {"complete":"30d","error":"90d","cancelled":"30d","busy_percent":5}"#,
            ],
            "{language}"
        );
        // The same two tasks, as the Rust client finds them by their keys.
        let again = o
            .client
            .create_tasks(&[tasker_client::CreateTask::new("rust_examples", "linear")
                .context(serde_json::json!({"value": 3}))
                .idempotency_key(format!("{prefix}-1"))])
            .await?;
        assert_eq!(
            again.results[0].status,
            tasker_client::BatchStatus::Existing,
            "{language}: {again:?}"
        );
    }
    Ok(())
}
