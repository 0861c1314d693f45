//! Fair sharing through a real orchestrator, PostgreSQL and RabbitMQ, with the Rust fixture
//! worker: a concurrency limit per customer never exceeded (as the handlers count and as the
//! steps' own times say), slots given back by every way out of flight and recounted to zero
//! drift by the reconciler, throttled steps started in priority order, rate-limited starts
//! paced no faster than their limit and held by a pause until its end, and bad limits refused
//! by name. Waits are on the orchestrator's events, each bounded by a timeout; speed figures
//! (how fast, how fair) live in `benches/fair_sharing.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv, post_json, repo_root, steps_by_name, templates};
use tasker_client::{CreateTask, Error, Priority, Step, Task};

#[path = "flow/copies.rs"]
mod copies;

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
async fn a_throttled_step_says_what_holds_it_and_a_cancel_frees_the_slot() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The first holds the account's only slot for a minute; the second waits for it.
    let holder = create(
        &o,
        "single_file",
        json!({"account": "acct-1", "sleep_ms": 60000}),
    )
    .await?;
    let waiter = create(
        &o,
        "single_file",
        json!({"account": "acct-1", "sleep_ms": 0}),
    )
    .await?;
    assert_eq!(holder.priority, "low", "the template's priority");
    let step = o
        .until(
            Duration::from_secs(10),
            "the second task's step throttled",
            || async {
                let s = steps_by_name(&o.client, waiter.id).await?;
                Ok(Some(s["book"].clone()).filter(|s| s.state == "throttled"))
            },
        )
        .await?;
    let t = step.throttle.as_ref().expect("what holds it");
    assert_eq!(t["kind"], "concurrency");
    assert_eq!(t["key"], "rust_examples/single_file/book:acct-1");
    assert_eq!(t["limit"], 1);
    assert!(t["until"].is_null() && t["since"].is_string(), "{t}");
    assert_eq!(step.attempt, 0, "not in flight: no attempt counted");
    let keys = o
        .client
        .concurrency_limits(Some("rust_examples/single_file/"))
        .await?;
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(
        (keys[0].in_use, keys[0].limit, keys[0].throttled),
        (1, 1, 1)
    );
    // Cancelling the holder gives its slot back; the waiter starts and finishes.
    o.client.cancel(holder.id).await?;
    let done = o.wait(waiter.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let history = o.client.history(waiter.id).await?;
    let tos: Vec<&str> = history
        .iter()
        .filter(|t| t.step.is_some())
        .map(|t| t.to.as_str())
        .collect();
    assert_eq!(tos, ["throttled", "enqueued", "completed"], "{history:?}");
    // A cancelled throttled step gives back nothing it did not hold.
    let a = create(
        &o,
        "single_file",
        json!({"account": "acct-2", "sleep_ms": 60000}),
    )
    .await?;
    let b = create(
        &o,
        "single_file",
        json!({"account": "acct-2", "sleep_ms": 0}),
    )
    .await?;
    o.until(
        Duration::from_secs(10),
        "acct-2's second step throttled",
        || async {
            let s = steps_by_name(&o.client, b.id).await?;
            Ok((s["book"].state == "throttled").then_some(()))
        },
    )
    .await?;
    o.client.cancel(b.id).await?;
    o.client.cancel(a.id).await?;
    no_slot_held(&o).await?;
    // The metrics say it too.
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    for family in [
        "tasker_throttle_wait_seconds",
        "tasker_steps_throttled",
        "tasker_throttled_woken_total",
    ] {
        assert!(metrics.contains(family), "{family} missing from /metrics");
    }
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_steps_start_high_priority_first() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let holder = create(&o, "single_file", json!({"account": "p", "sleep_ms": 400})).await?;
    let mut waiting = Vec::new();
    for (label, priority) in [
        ("low1", None),
        ("normal", Some(Priority::Normal)),
        ("low2", None),
        ("high", Some(Priority::High)),
    ] {
        let mut req = CreateTask::new("rust_examples", "single_file")
            .context(json!({"account": "p", "sleep_ms": 0}));
        req.priority = priority;
        let t = o.client.create_task(&req).await?;
        waiting.push((label, t.id));
    }
    for (_, id) in &waiting {
        assert_eq!(o.wait(*id).await?.state, "complete");
    }
    assert_eq!(o.wait(holder.id).await?.state, "complete");
    let mut started: Vec<(DateTime<Utc>, &str)> = Vec::new();
    for (label, id) in &waiting {
        let s = steps_by_name(&o.client, *id).await?;
        started.push((s["book"].dispatched_at.unwrap(), label));
    }
    started.sort();
    let order: Vec<&str> = started.iter().map(|(_, l)| *l).collect();
    assert_eq!(order, ["high", "normal", "low1", "low2"]);
    let high = o.client.task(waiting[3].1, None).await?;
    assert_eq!(high.priority, "high");
    no_slot_held(&o).await?;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_rate_key_holds_every_start_and_then_paces_them() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The key exists once a step claimed it.
    let first = o
        .run_task("rust_examples", "rated", json!({"sleep_ms": 0}))
        .await?;
    assert_eq!(first.state, "complete");
    // Microseconds, as PostgreSQL keeps them.
    let pause_end = (Utc::now() + chrono::Duration::milliseconds(2500)).trunc_subsecs(6);
    let paused = o
        .client
        .pause_rate_limit("flow-provider", pause_end, Some("429 from the provider"))
        .await?;
    assert_eq!(paused.paused_until, Some(pause_end));
    assert_eq!((paused.limit, paused.per_ms, paused.burst), (100, 1000, 20));
    let mut ids = Vec::new();
    for _ in 0..60 {
        ids.push(create(&o, "rated", json!({"sleep_ms": 0})).await?.id);
    }
    let listed = o.client.rate_limits().await?;
    let key = listed.iter().find(|r| r.key == "flow-provider").unwrap();
    assert_eq!(key.pause_note.as_deref(), Some("429 from the provider"));
    let step = &o.client.steps(ids[0]).await?[0];
    assert_eq!(step.state, "throttled");
    assert_eq!(step.throttle.as_ref().unwrap()["kind"], "paused");
    let mut starts = Vec::new();
    for id in &ids {
        let task = o.wait(*id).await?;
        assert_eq!(task.state, "complete", "{task:?}");
        starts.push(o.client.steps(*id).await?[0].dispatched_at.unwrap());
    }
    starts.sort();
    // None before the pause's end; then 20 at once and one every 10 ms. The bucket's clock
    // starts at the first claim after the pause, itself no earlier than the pause's end (both
    // the database's clock), and a step's start is recorded after its claim: the k-th (from 0)
    // starts no earlier than (k - 19) × 10 ms after the pause's end, however slow the machine.
    assert!(starts[0] >= pause_end, "{} before {pause_end}", starts[0]);
    for (k, at) in starts.iter().enumerate().skip(20) {
        let least = chrono::Duration::milliseconds((k as i64 - 19) * 10);
        assert!(
            *at - pause_end >= least,
            "start {k} came {} after the pause's end",
            *at - pause_end
        );
    }
    // Pausing again, then resuming, lets the next start at once.
    o.client
        .pause_rate_limit(
            "flow-provider",
            Utc::now() + chrono::Duration::hours(1),
            None,
        )
        .await?;
    let held = create(&o, "rated", json!({"sleep_ms": 0})).await?;
    o.until(
        Duration::from_secs(10),
        "the step held by the pause",
        || async {
            let s = o.client.steps(held.id).await?;
            Ok((s[0].state == "throttled").then_some(()))
        },
    )
    .await?;
    let resumed = o.client.resume_rate_limit("flow-provider").await?;
    assert_eq!((resumed.paused_until, resumed.pause_note), (None, None));
    assert_eq!(o.wait(held.id).await?.state, "complete");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_priority_travels_in_its_own_lane() -> anyhow::Result<()> {
    use futures_util::StreamExt;
    let env = env().await?;
    let o = env.orchestrator().await?;
    // No worker: each root step's message waits in its lane, where this test reads it.
    let broker = tasker_broker::Broker::connect(
        &env.config.amqp_url,
        &env.config.queue_prefix,
        "lane-reader",
    )
    .await?;
    for (priority, lane) in [
        (Priority::High, Some("high")),
        (Priority::Normal, None),
        (Priority::Low, Some("low")),
    ] {
        let task = o
            .client
            .create_task(
                &CreateTask::new("rust_examples", "linear")
                    .context(json!({"value": 6}))
                    .priority(priority),
            )
            .await?;
        let queue =
            tasker_broker::topology::lane_queue(&env.config.queue_prefix, "rust_examples", lane);
        let mut sub = broker.consume(&queue, "lane-reader", 1).await?;
        let delivery = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await?
            .expect("a delivery")?;
        let steps: Vec<Value> = tasker_shared::message::decode_batch(&delivery.data)?;
        assert_eq!(steps.len(), 1, "{queue}: {steps:?}");
        assert_eq!(steps[0]["task_id"], json!(task.id), "{queue}");
        // Only a priority that is not normal is written into the message.
        assert_eq!(
            steps[0].get("priority"),
            lane.map(|l| json!(l)).as_ref(),
            "{queue}: {}",
            steps[0]
        );
    }
    broker.close().await;
    o.stop().await;
    env.cleanup().await
}

/// A step left throttled behind a free slot (the wake pass found it locked by another
/// transaction and went on) is woken by the reconciler's pass: nothing waits for a slot nobody
/// holds. The orchestrator is stopped while the reconciler runs, so only it can mark the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciler_wakes_a_step_left_behind_a_free_slot() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let key = "rust_examples/single_file/book:left";
    let holder = create(
        &o,
        "single_file",
        json!({"account": "left", "sleep_ms": 300}),
    )
    .await?;
    let waiter = create(&o, "single_file", json!({"account": "left", "sleep_ms": 0})).await?;
    let step = o
        .until(Duration::from_secs(10), "the waiter throttled", || async {
            let s = steps_by_name(&o.client, waiter.id).await?;
            Ok(Some(s["book"].clone()).filter(|s| s.state == "throttled"))
        })
        .await?;
    // Held by this transaction, the waiter is skipped when the holder's slot frees.
    let mut hold = db.begin().await?;
    sqlx::query("SELECT 1 FROM steps WHERE id = $1 FOR UPDATE")
        .bind(step.id)
        .execute(&mut *hold)
        .await?;
    assert_eq!(o.wait(holder.id).await?.state, "complete");
    let slot = |db: sqlx::PgPool| async move {
        let row: (i32, bool) =
            sqlx::query_as("SELECT in_use, wake FROM concurrency_slots WHERE key = $1")
                .bind(key)
                .fetch_one(&db)
                .await?;
        anyhow::Ok(row)
    };
    o.until(
        Duration::from_secs(10),
        "the wake pass over the freed key",
        || async { Ok((slot(db.clone()).await? == (0, false)).then_some(())) },
    )
    .await?;
    hold.rollback().await?;
    o.stop().await;
    let left = step_state(&db, step.id).await?;
    assert_eq!(left, "throttled", "left behind a free slot");
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    assert!(store.reconcile_slots().await?.is_empty(), "no drift");
    assert_eq!(slot(db.clone()).await?, (0, true), "the key marked to wake");
    let o = env.orchestrator().await?;
    assert_eq!(o.wait(waiter.id).await?.state, "complete");
    store.pool().close().await;
    db.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

async fn step_state(db: &sqlx::PgPool, step: Uuid) -> anyhow::Result<String> {
    Ok(sqlx::query_scalar("SELECT state FROM steps WHERE id = $1")
        .bind(step)
        .fetch_one(db)
        .await?)
}
