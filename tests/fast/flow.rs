//! Fair sharing through a real orchestrator, PostgreSQL and RabbitMQ, with the Rust fixture
//! worker: a concurrency limit per customer never exceeded (as the handlers count and as the
//! steps' own times say), slots given back by every way out of flight and recounted to zero
//! drift by the reconciler, throttled steps started in priority order, rate-limited starts
//! paced no faster than their limit and held by a pause until its end, and bad limits refused
//! by name. Waits are on the orchestrator's events, each bounded by a timeout; speed figures
//! (how fast, how fair) live in `benches/fair_sharing.rs`.
//!
//! The limit per customer and bad limits are here; what holds a throttled step and what frees
//! it in `throttled`, priorities in `priorities`, a paused rate key in `rates`, copies of an
//! ended attempt in `copies`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv, post_json, repo_root, templates};
use tasker_client::{CreateTask, Error, Step, Task};

#[path = "flow/copies.rs"]
mod copies;
#[path = "flow/priorities.rs"]
mod priorities;
#[path = "flow/rates.rs"]
mod rates;
#[path = "flow/throttled.rs"]
mod throttled;

/// An environment whose orchestrator knows the Rust fixtures and the fair-sharing templates.
async fn env() -> anyhow::Result<TestEnv> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        templates("rust"),
        repo_root().join("tests/fixtures/task_templates/flow"),
    ];
    env.config.worker.shutdown_timeout_ms = 200;
    Ok(env)
}

async fn create(o: &RunningOrchestrator, name: &str, context: Value) -> anyhow::Result<Task> {
    Ok(o.client
        .create_task(&CreateTask::new("rust_examples", name).context(context))
        .await?)
}

/// The most steps of one group whose [started, finished] intervals overlap at any instant.
fn most_at_once(steps: &[&Step]) -> usize {
    let mut edges: Vec<(DateTime<Utc>, i32)> = Vec::new();
    for s in steps {
        // An end sorts before a start at the same instant: touching is not overlapping.
        edges.push((s.started_at.expect("started"), 1));
        edges.push((s.finished_at.expect("finished"), -1));
    }
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// Every slot free, every count right: the reconciler finds nothing to correct.
async fn no_slot_held(o: &RunningOrchestrator) -> anyhow::Result<()> {
    let drift = o.shared.store.reconcile_slots().await?;
    assert!(drift.is_empty(), "the reconciler corrected {drift:?}");
    for l in o.client.concurrency_limits(None).await? {
        assert_eq!((l.in_use, l.throttled), (0, 0), "{l:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_per_customer_at_most_and_every_slot_back() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let mut tasks: Vec<(String, Uuid)> = Vec::new();
    for customer in ["A", "B"] {
        for _ in 0..20 {
            let t = create(&o, "metered", json!({"customer": customer, "sleep_ms": 15})).await?;
            tasks.push((customer.to_owned(), t.id));
        }
    }
    let mut steps: BTreeMap<String, Vec<Step>> = BTreeMap::new();
    for (customer, id) in &tasks {
        let task = o.wait(*id).await?;
        assert_eq!(task.state, "complete", "{task:?}");
        for s in o.client.steps(*id).await? {
            // The handler counted the customer's steps running in the worker when it started.
            let running = s.result.as_ref().unwrap()["running"].as_u64().unwrap();
            assert!(running <= 2, "{customer}: {running} running at once: {s:?}");
            assert_eq!(
                s.limits.as_ref().unwrap()["concurrency"],
                json!({"key": format!("rust_examples/metered:{customer}"), "limit": 2})
            );
            steps.entry(customer.clone()).or_default().push(s);
        }
    }
    for (customer, s) in &steps {
        assert_eq!(s.len(), 40);
        let most = most_at_once(&s.iter().collect::<Vec<_>>());
        assert!(
            (1..=2).contains(&most),
            "{customer}: {most} steps overlapped"
        );
    }
    // Somebody waited: 40 steps of 15 ms in two slots cannot all start at once.
    let mut throttled = 0;
    for (_, id) in &tasks {
        let history = o.client.history(*id).await?;
        throttled += history.iter().filter(|t| t.to == "throttled").count();
    }
    assert!(throttled > 0, "no step was ever throttled");
    no_slot_held(&o).await?;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_limits_and_keys_are_refused_by_name() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let api_error = |r: Result<Task, Error>| match r {
        Err(Error::Api {
            status,
            code,
            message,
        }) => (status, code, message),
        other => panic!("expected an API error, got {other:?}"),
    };
    // A key missing from the context, or too long: 422 naming it, nothing created.
    let before = o.client.tasks(&Default::default()).await?.tasks.len();
    let (status, code, message) = api_error(
        o.client
            .create_task(&CreateTask::new("rust_examples", "single_file").context(json!({})))
            .await,
    );
    assert_eq!(
        (status, code.as_str()),
        (422, "concurrency_key_missing"),
        "{message}"
    );
    assert!(message.contains("/account"), "{message}");
    let long = "x".repeat(129);
    let (status, code, _) = api_error(
        o.client
            .create_task(
                &CreateTask::new("rust_examples", "single_file").context(json!({"account": long})),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (422, "concurrency_key_too_long"));
    assert_eq!(
        o.client.tasks(&Default::default()).await?.tasks.len(),
        before
    );
    // A bad priority is bad JSON.
    let (status, body) = post_json(
        &format!("{}/v1/tasks", o.url()),
        json!({"namespace": "rust_examples", "name": "rated", "priority": "urgent"}).to_string(),
    )
    .await?;
    assert_eq!(status, 400, "{body}");
    // Templates: each bad limit named by its field.
    for (limit, field) in [
        (
            "concurrency: {key: /customer, limit: 0}",
            "concurrency.limit",
        ),
        ("concurrency: {key: customer, limit: 2}", "concurrency.key"),
        ("rate_limit: {key: p, limit: 10, per: 0s}", "rate_limit.per"),
        (
            "rate_limit: {key: 'a b', limit: 10, per: 1s}",
            "rate_limit.key",
        ),
    ] {
        let yaml = format!(
            "namespace: rust_examples\nname: bad_limits\nversion: '1'\n{limit}\nsteps:\n  - name: a\n    handler: double\n"
        );
        let err = o
            .client
            .register_template(&yaml, None, None)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(field), "{limit}: {text}");
    }
    // Pausing: an unknown key, a past time.
    let unknown = o
        .client
        .pause_rate_limit(
            "never-used",
            Utc::now() + chrono::Duration::minutes(1),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("unknown_rate_limit"),
        "{unknown}"
    );
    sqlx::query("INSERT INTO rate_limits (key, lim, per_ms, burst) VALUES ('k', 1, 1000, 1)")
        .execute(o.shared.store.pool())
        .await?;
    let past = o
        .client
        .pause_rate_limit("k", Utc::now() - chrono::Duration::minutes(1), None)
        .await
        .unwrap_err();
    assert!(past.to_string().contains("invalid_until"), "{past}");
    o.stop().await;
    env.cleanup().await
}
