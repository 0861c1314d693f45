//! Start controls (docs/events.md): a trailing debounce on a trigger starts one task for a
//! burst of events, `period` after the last, with its data; a leading debounce on `POST
//! /v1/tasks` starts at once and a never-ending burst starts one task per `max`; a dedupe
//! window answers its task while it lasts, also after the task is purged, and lets the key go
//! after it; bad controls are refused by name — against a real orchestrator and PostgreSQL.

use std::time::Duration;

use serde_json::json;
use sqlx::Connection;
use tasker_client::{CreateTask, DebounceMode, Error, SendEvent};
use uuid::Uuid;

use super::bare_env;

/// Started by `customer.updated`, one task per burst of a customer's events. Nobody serves its
/// step: a started task stays running.
const SYNC: &str = "namespace: ctl_ev
name: sync
version: '1'
context_schema:
  type: object
  required: [customer]
on:
  - event: customer.updated
    debounce: {key: /data/customer, period: 5s}
  - event: order.paid
    dedupe: {key: /data/order, ttl: 24h}
    context: {customer: /data/customer, order: /data/order}
steps:
  - name: push
    handler: nobody_serves_this
";

fn update(customer: &str, n: i64) -> SendEvent {
    SendEvent {
        namespace: "ctl_ev".into(),
        name: "customer.updated".into(),
        data: Some(json!({ "customer": customer, "n": n })),
        key: None,
        id: None,
    }
}

async fn state(o: &tasker::RunningOrchestrator, id: Uuid) -> anyhow::Result<String> {
    Ok(o.client.task(id, None).await?.state.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_events_starts_one_task_after_the_last_with_its_data() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(SYNC, Some("sync.yaml"), None)
        .await?;

    // 100 events for one customer in one burst, one for another, sent as they come.
    let mut answers = Vec::new();
    for n in 0..100 {
        answers.push(o.client.send_event(&update("ada", n)).await?.0);
    }
    let other = o.client.send_event(&update("bob", 0)).await?.0;
    let task = answers[0].started[0].task_id.expect("a task");
    assert!(!answers[0].started[0].debounced, "{:?}", answers[0]);
    for a in &answers[1..] {
        assert_eq!(a.started[0].task_id, Some(task), "{a:?}");
        assert!(a.started[0].debounced, "{a:?}");
    }
    let bobs = other.started[0].task_id.expect("a task of its own");
    assert_ne!(bobs, task);

    // Waiting to start, with the last event's data.
    let waiting = o.client.task(task, None).await?;
    assert_eq!(waiting.state.to_string(), "scheduled");
    assert_eq!(waiting.context, json!({ "customer": "ada", "n": 99 }));

    o.until(
        Duration::from_secs(30),
        "the burst's task starts",
        || async { Ok((state(&o, task).await? == "running").then_some(())) },
    )
    .await?;
    // Not before `period` after the last event (the database's clock on both sides).
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let started: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT at FROM transitions WHERE task_id = $1 AND to_state = 'running'",
    )
    .bind(task)
    .fetch_one(&mut db)
    .await?;
    let last = answers[99].received_at;
    let after = (started - last).to_std()?;
    println!(
        "100 events sent in {:?}; their task started {after:?} after the last",
        (last - answers[0].received_at).to_std()?
    );
    assert!(
        after >= Duration::from_millis(4990) && after < Duration::from_secs(20),
        "started {after:?} after the last event"
    );
    let tasks: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE namespace = 'ctl_ev'")
        .fetch_one(&mut db)
        .await?;
    assert_eq!(tasks, 2, "one task per customer");

    // The burst has ended: the next event begins another.
    let next = o.client.send_event(&update("ada", 100)).await?.0;
    let second = next.started[0].task_id.expect("a task");
    assert_ne!(second, task);
    assert!(!next.started[0].debounced);
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedupe_key_answers_its_task_until_its_ttl_even_once_purged() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(SYNC, Some("sync.yaml"), None)
        .await?;
    let create = |ttl: &str| {
        CreateTask::new("ctl_ev", "sync")
            .context(json!({ "customer": "ada" }))
            .dedupe("invoice-1", ttl)
    };

    let first = o.client.create_task(&create("3s")).await?;
    let again = o.client.create_task(&create("3s")).await?;
    assert_eq!(again.id, first.id);

    // Purged: the window still answers its task, by id, and creates nothing.
    o.client.cancel(first.id).await?;
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let purged: serde_json::Value = sqlx::query_scalar(
        "SELECT tasker_purge_tasks(ARRAY['cancelled'], ARRAY[now() + interval '1 minute'], 10, true)",
    )
    .fetch_one(&mut db)
    .await?;
    assert_eq!(purged["tasks"], 1, "{purged}");
    match o.client.create_task(&create("3s")).await {
        Err(Error::Api {
            status,
            code,
            message,
        }) => {
            assert_eq!((status, code.as_str()), (409, "deduplicated"));
            assert!(message.contains(&first.id.to_string()), "{message}");
        }
        other => panic!("expected 409 deduplicated, got {other:?}"),
    }
    let count =
        || sqlx::query_scalar::<_, i64>("SELECT count(*) FROM tasks WHERE namespace = 'ctl_ev'");
    assert_eq!(count().fetch_one(&mut db).await?, 0);

    // After the window the key starts a new task.
    let fresh = o
        .until(Duration::from_secs(20), "the window ends", || async {
            match o.client.create_task(&create("3s")).await {
                Ok(task) => Ok(Some(task)),
                Err(Error::Api { code, .. }) if code == "deduplicated" => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .await?;
    assert_ne!(fresh.id, first.id);
    assert_eq!(count().fetch_one(&mut db).await?, 1);
    // Retention expires a window whose task is still kept: the task lets go of the key.
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    o.until(
        Duration::from_secs(20),
        "retention expires the window",
        || async { Ok((store.purge_start_controls(100).await? > 0).then_some(())) },
    )
    .await?;
    let key: Option<String> = sqlx::query_scalar("SELECT idempotency_key FROM tasks WHERE id = $1")
        .bind(fresh.id)
        .fetch_one(&mut db)
        .await?;
    assert_eq!(key, None, "the expired key still holds its task");

    // An event's trigger: one task per order for a day, the repeat answered with it.
    let paid = |order: i64| SendEvent {
        namespace: "ctl_ev".into(),
        name: "order.paid".into(),
        data: Some(json!({ "customer": "ada", "order": order })),
        key: None,
        id: None,
    };
    let one = o.client.send_event(&paid(7)).await?.0;
    let two = o.client.send_event(&paid(7)).await?.0;
    let task = one.started[0].task_id.expect("a task");
    assert!(!one.started[0].deduplicated);
    assert_eq!(two.started[0].task_id, Some(task));
    assert!(two.started[0].deduplicated, "{two:?}");
    // An event without the key starts nothing, and says why.
    let mut keyless = paid(8);
    keyless.data = Some(json!({ "customer": "ada" }));
    let refused = o.client.send_event(&keyless).await?.0;
    let why = refused.started[0].refused.as_ref().expect("refused");
    assert_eq!(why.code, "start_key_missing", "{why:?}");
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

/// A never-ending burst of `mode`, period 2 s and max 3 s: a request every 200 ms for 4.5 s
/// (pacing, not waiting). Returns each task that answered, the first answer of each, the
/// number of requests, and when the first was sent.
async fn burst(
    o: &tasker::RunningOrchestrator,
    mode: DebounceMode,
) -> anyhow::Result<(Vec<tasker_client::Task>, i64, chrono::DateTime<chrono::Utc>)> {
    o.client
        .register_template(SYNC, Some("sync.yaml"), None)
        .await?;
    let (began, sent) = (std::time::Instant::now(), chrono::Utc::now());
    let mut tasks: Vec<tasker_client::Task> = Vec::new();
    let mut n = 0;
    while began.elapsed() < Duration::from_millis(4500) {
        let req = CreateTask::new("ctl_ev", "sync")
            .context(json!({ "customer": "ada", "n": n }))
            .debounce("ada", "2s", Some("3s"), mode);
        let task = o.client.create_task(&req).await?;
        if tasks.last().map(|t| t.id) != Some(task.id) {
            tasks.push(task);
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok((tasks, n, sent))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leading_debounce_starts_at_once_and_once_per_max() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    let (tasks, n, _) = burst(&o, DebounceMode::Leading).await?;
    // One task per `max` (3 s) of the burst: the first, at once, and one when its max passed.
    let ids: Vec<Uuid> = tasks.iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), 2, "{n} requests answered by {ids:?}");
    assert_eq!(
        tasks[0].state.to_string(),
        "running",
        "a leading burst starts at once"
    );
    assert_eq!(
        o.client.task(ids[0], None).await?.context["n"],
        0,
        "a leading task keeps its first request's context"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_ending_trailing_burst_starts_one_task_per_max() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    let (tasks, n, sent) = burst(&o, DebounceMode::Trailing).await?;
    // The first burst's task started at its max, 3 s after the first request, with the context
    // of the last request before it; the requests after it began a second burst.
    let ids: Vec<Uuid> = tasks.iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), 2, "{n} requests answered by {ids:?}");
    assert_eq!(tasks[0].state.to_string(), "scheduled");
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    // When it started, against when the first request was sent (one machine's clock).
    let started: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT at FROM transitions WHERE task_id = $1 AND to_state = 'running'",
    )
    .bind(ids[0])
    .fetch_one(&mut db)
    .await?;
    let after = (started - sent).to_std()?;
    assert!(
        after >= Duration::from_secs(3) && after < Duration::from_secs(15),
        "the first burst's task started {after:?} after its first request"
    );
    let first = o.client.task(ids[0], None).await?;
    assert!(
        first.context["n"].as_i64().is_some_and(|k| k > 0),
        "{first:?}"
    );
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_start_controls_are_refused_by_name_and_create_nothing() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(SYNC, Some("sync.yaml"), None)
        .await?;
    let base = || CreateTask::new("ctl_ev", "sync").context(json!({ "customer": "ada" }));
    let cases = [
        (
            base().dedupe("k", "24h").idempotency_key("k"),
            "invalid_dedupe",
            "idempotency_key",
        ),
        (base().dedupe("", "24h"), "invalid_dedupe", "dedupe.key"),
        (base().dedupe("k", "500ms"), "invalid_dedupe", "dedupe.ttl"),
        (
            base()
                .debounce("k", "5s", None, DebounceMode::Trailing)
                .delay("1m"),
            "invalid_debounce",
            "delay",
        ),
        (
            base().debounce("k", "5s", Some("2s"), DebounceMode::Trailing),
            "invalid_debounce",
            "debounce.max",
        ),
        (
            base().debounce("k", "soon", None, DebounceMode::Leading),
            "invalid_debounce",
            "debounce.period",
        ),
    ];
    for (req, want, names) in cases {
        match o.client.create_task(&req).await {
            Err(Error::Api {
                status,
                code,
                message,
            }) => {
                assert_eq!((status, code.as_str()), (400, want), "{message}");
                assert!(message.contains(names), "{message} does not name {names}");
            }
            other => panic!("{req:?}: expected 400 {want}, got {other:?}"),
        }
    }
    // A trigger with both, or a key pointer outside the event, is refused at registration.
    let both = SYNC.replace(
        "debounce: {key: /data/customer, period: 5s}",
        "debounce: {period: 5s}\n    dedupe: {ttl: 1h}",
    );
    let outside = SYNC.replace("/data/customer, period", "/context/customer, period");
    for (yaml, field) in [(both, "on[0].debounce"), (outside, "on[0].debounce.key")] {
        let e = o
            .client
            .register_template(&yaml, Some("bad.yaml"), None)
            .await
            .expect_err("refused");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }

    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let rows: (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM task_keys),
                (SELECT count(*) FROM debounces)",
    )
    .fetch_one(&mut db)
    .await?;
    assert_eq!(rows, (0, 0, 0));
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}
