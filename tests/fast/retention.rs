//! Bulk creation and retention through a real orchestrator, PostgreSQL and RabbitMQ: a batch
//! answers each item in order (created, existing, refused with its reason) and a repeat creates
//! nothing new; bad batches are refused whole with nothing created; a purge removes exactly the
//! finished tasks older than its cut-off — never one whose parent or child is unfinished — with
//! everything of theirs, and a purged id answers 410 `task_purged`. The 100,000-task purge and
//! a purge killed midway are in `tests/slow/reliability/purge.rs`; speed figures in
//! `benches/throughput`.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Connection;
use uuid::Uuid;

use tasker::{TestEnv, copy_finished_task, post_json, stray_steps_and_edges};
use tasker_client::{BatchStatus, CreateTask, Error, PurgeRequest};

fn linear(value: i64) -> CreateTask {
    CreateTask::new("rust_examples", "linear").context(json!({ "value": value }))
}

async fn task_count(env: &TestEnv) -> anyhow::Result<i64> {
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let n = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&mut db)
        .await?;
    db.close().await?;
    Ok(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answers_each_item_and_a_repeat_creates_nothing() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.max_batch_tasks = 20;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let items = vec![
        linear(1).idempotency_key("k-1"),
        linear(2).idempotency_key("k-2"),
        CreateTask::new("rust_examples", "no_such_template").idempotency_key("k-3"),
        // The schema wants an integer.
        CreateTask::new("rust_examples", "linear")
            .context(json!({ "value": "six" }))
            .idempotency_key("k-4"),
        linear(5),
    ];
    let first = o.client.create_tasks(&items).await?;
    let statuses = |b: &tasker_client::BatchCreated| -> Vec<String> {
        b.results
            .iter()
            .map(|r| match (&r.status, &r.error) {
                (BatchStatus::Refused, Some(e)) => format!("refused:{}", e.code),
                (s, _) => serde_json::to_value(s)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            })
            .collect()
    };
    assert_eq!(
        statuses(&first),
        [
            "created",
            "created",
            "refused:unknown_template",
            "refused:context_schema_violation",
            "created"
        ]
    );
    assert_eq!((first.created, first.existing, first.refused), (3, 0, 2));
    assert!(first.results.iter().enumerate().all(|(i, r)| r.index == i));
    // They run: the batch dispatched their first steps.
    for r in first.results.iter().filter(|r| r.task_id.is_some()) {
        let task = o.wait(r.task_id.unwrap()).await?;
        assert_eq!(task.state, "complete", "{task:?}");
    }
    let before = task_count(&env).await?;
    // The same request again: the keyed ones exist, the unkeyed one is created again.
    let again = o.client.create_tasks(&items).await?;
    assert_eq!(
        statuses(&again),
        [
            "existing",
            "existing",
            "refused:unknown_template",
            "refused:context_schema_violation",
            "created"
        ]
    );
    assert_eq!(again.results[0].task_id, first.results[0].task_id);
    assert_eq!(again.results[1].task_id, first.results[1].task_id);
    assert_eq!(task_count(&env).await?, before + 1);
    // A batch that creates only some of its tasks still gives the new one its steps, and it runs.
    let fresh = o.wait(again.results[4].task_id.unwrap()).await?;
    assert_eq!(fresh.state, "complete", "{fresh:?}");
    // A key used again with another context is refused, for that item only.
    let reused = o
        .client
        .create_tasks(&[linear(9).idempotency_key("k-1"), linear(10)])
        .await?;
    assert_eq!(
        statuses(&reused),
        ["refused:idempotency_key_reused", "created"]
    );

    // Refused whole, nothing created: two items with one key, no items, too many, a body that
    // is not a batch; an item that is not a task is refused alone.
    let before = task_count(&env).await?;
    let url = format!("{}/v1/tasks:batch", o.url());
    let item = |key: &str| json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 1}, "idempotency_key": key});
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"tasks": [item("d-1"), item("d-2"), item("d-1")]}),
            400,
            "duplicate_idempotency_key",
        ),
        (json!({"tasks": []}), 400, "empty_batch"),
        (
            json!({"tasks": (0..21).map(|i| item(&format!("many-{i}"))).collect::<Vec<_>>()}),
            413,
            "batch_too_large",
        ),
        (json!([item("x")]), 400, "invalid_json"),
    ];
    for (body, status, code) in cases {
        let (got, answer) = post_json(&url, body.to_string()).await?;
        assert_eq!(got.as_u16(), status, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
    }
    let (_, duplicate) = post_json(
        &url,
        json!({"tasks": [item("d-1"), item("d-2"), item("d-1")]}).to_string(),
    )
    .await?;
    assert_eq!(
        duplicate["error"]["details"],
        json!({"key": "d-1", "indexes": [0, 2]})
    );
    let (got, answer) = post_json(
        &url,
        json!({"tasks": [item("p-1"), {"namespace": "rust_examples", "name": "linear", "priority": "urgent"}]}).to_string(),
    )
    .await?;
    assert_eq!(got.as_u16(), 200, "{answer}");
    assert_eq!(answer["results"][0]["status"], "created");
    assert_eq!(
        answer["results"][1]["error"]["code"], "invalid_json",
        "{answer}"
    );
    assert_eq!(task_count(&env).await?, before + 1);

    // The metrics are the process's (tests run side by side): the families exist.
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    assert!(metrics.contains("tasker_tasks_created_total{namespace=\"rust_examples\"}"));
    assert!(
        metrics.contains("tasker_task_batch_size"),
        "no batch size histogram"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_in_one_request() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let items: Vec<CreateTask> = (0..10_000)
        .map(|i| linear(i % 1000).idempotency_key(format!("bulk-{i}")))
        .collect();
    let done = o.client.create_tasks(&items).await?;
    assert_eq!((done.created, done.existing, done.refused), (10_000, 0, 0));
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let (tasks, enqueued, steps, edges): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tasks WHERE state = 'running'),
                (SELECT count(*) FROM steps WHERE state = 'enqueued' AND attempt = 1),
                (SELECT count(*) FROM steps),
                (SELECT count(*) FROM step_edges)",
    )
    .fetch_one(&mut db)
    .await?;
    assert_eq!(
        (tasks, enqueued, steps, edges),
        (10_000, 10_000, 40_000, 30_000)
    );
    // Each task its own key, context and steps.
    let (keys, contexts): (i64, i64) = sqlx::query_as(
        "SELECT count(DISTINCT idempotency_key), count(DISTINCT context) FROM tasks",
    )
    .fetch_one(&mut db)
    .await?;
    assert_eq!((keys, contexts), (10_000, 1_000));
    let again = o.client.create_tasks(&items).await?;
    assert_eq!((again.created, again.existing), (0, 10_000));
    for (a, b) in done.results.iter().zip(&again.results) {
        assert_eq!(a.task_id, b.task_id);
    }
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&mut db)
        .await?;
    assert_eq!(total, 10_000);
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_takes_old_finished_tasks_and_nothing_their_family_still_needs()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let done = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    assert_eq!(done.state, "complete");
    worker.stop().await;
    // Old finished tasks, a finished one still young, and running ones (no worker now).
    let old = copy_finished_task(
        &env.config.database_url,
        done.id,
        50,
        chrono::Duration::days(40),
    )
    .await?;
    let running = o.client.create_task(&linear(1)).await?;
    let running_child = o.client.create_task(&linear(2)).await?;
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    // Family ties: an old finished child of a running task, and an old finished parent of a
    // running child, stay.
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(old[0])
        .bind(running.id)
        .execute(&mut db)
        .await?;
    sqlx::query("UPDATE tasks SET has_children = true WHERE id = $1")
        .bind(old[1])
        .execute(&mut db)
        .await?;
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(running_child.id)
        .bind(old[1])
        .execute(&mut db)
        .await?;

    let purge = |dry_run: bool, older_than: &str| PurgeRequest {
        older_than: older_than.to_owned(),
        states: None,
        dry_run,
        limit: None,
    };
    // The policy as configured, and no purge yet.
    let policy = o.client.retention().await?;
    let r = &env.config.retention;
    assert_eq!(
        (&policy.complete, &policy.error, &policy.cancelled),
        (&r.complete, &r.error, &r.cancelled)
    );
    assert_eq!(
        (policy.batch, policy.busy_percent),
        (r.batch as u64, r.busy_percent)
    );
    assert_eq!(policy.last_purged_at, None);
    let before_purge = chrono::Utc::now();
    let dry = o.client.purge(&purge(true, "30d")).await?;
    assert_eq!(
        (dry.tasks, dry.rows, dry.more),
        (48, None, false),
        "{dry:?}"
    );
    assert_eq!(task_count(&env).await?, 53, "a dry run deleted something");
    assert_eq!(o.client.retention().await?.last_purged_at, None);
    // Too young for a 41-day cut-off: nothing goes.
    assert_eq!(o.client.purge(&purge(false, "41d")).await?.tasks, 0);
    // A limit stops it and says there is more.
    let some = o
        .client
        .purge(&PurgeRequest {
            limit: Some(10),
            ..purge(false, "30d")
        })
        .await?;
    assert_eq!((some.tasks, some.more), (10, true), "{some:?}");
    let rest = o.client.purge(&purge(false, "30d")).await?;
    assert_eq!((rest.tasks, rest.more), (38, false), "{rest:?}");
    let last = o
        .client
        .retention()
        .await?
        .last_purged_at
        .expect("a purge was remembered");
    assert!(
        last >= before_purge - chrono::Duration::seconds(5),
        "{last}"
    );
    assert_eq!(rest.by_state.get("complete"), Some(&38));
    // Each linear task: 1 task, 4 steps, 3 edges and its transitions.
    let per_task: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions WHERE task_id = $1")
        .bind(done.id)
        .fetch_one(&mut db)
        .await?;
    assert_eq!(rest.rows, Some(38 * (1 + 4 + 3 + per_task as u64)));
    assert!(rest.bytes.unwrap() > 38 * 500, "{rest:?}");

    // Left: the young one, the running ones and the two tied to them, whole.
    let mut left: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM tasks ORDER BY id")
        .fetch_all(&mut db)
        .await?;
    let mut kept = vec![done.id, running.id, running_child.id, old[0], old[1]];
    left.sort();
    kept.sort();
    assert_eq!(left, kept);
    let orphans: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM steps WHERE task_id NOT IN (SELECT id FROM tasks))
              + (SELECT count(*) FROM transitions WHERE task_id NOT IN (SELECT id FROM tasks))
              + (SELECT count(*) FROM step_edges WHERE task_id NOT IN (SELECT id FROM tasks))",
    )
    .fetch_one(&mut db)
    .await?;
    assert_eq!(orphans, 0);
    assert_eq!(stray_steps_and_edges(&mut db).await?, 0);
    let tombstones: i64 = sqlx::query_scalar("SELECT count(*) FROM purged_tasks")
        .fetch_one(&mut db)
        .await?;
    assert_eq!(tombstones, 48);

    // A purged id answers 410 on every task route; a kept one as before.
    let gone = old[2];
    match o.client.task(gone, None).await {
        Err(Error::Api {
            status: 410, code, ..
        }) => assert_eq!(code, "task_purged"),
        other => panic!("expected 410 task_purged, got {other:?}"),
    }
    for path in ["steps", "history"] {
        let resp = reqwest::get(format!("{}/v1/tasks/{gone}/{path}", o.url())).await?;
        assert_eq!(resp.status().as_u16(), 410, "{path}");
        let body: Value = resp.json().await?;
        assert_eq!(body["error"]["details"]["state"], "complete");
        assert_eq!(body["error"]["details"]["task_id"], gone.to_string());
    }
    let (status, _) = post_json(&format!("{}/v1/tasks/{gone}/cancel", o.url()), "").await?;
    assert_eq!(status.as_u16(), 410);
    assert_eq!(o.client.task(done.id, None).await?.state, "complete");
    // An id never seen is still 404.
    match o.client.task(Uuid::now_v7(), None).await {
        Err(Error::Api { status: 404, .. }) => {}
        other => panic!("expected 404, got {other:?}"),
    }

    // Bad requests change nothing.
    let url = format!("{}/v1/purge", o.url());
    for (body, code) in [
        (json!({"older_than": "30m"}), "invalid_older_than"),
        (json!({"older_than": "soon"}), "invalid_older_than"),
        (
            json!({"older_than": "30d", "states": ["running"]}),
            "invalid_state",
        ),
        (json!({"older_than": "30d", "limit": 0}), "invalid_limit"),
        (json!({"older_than": "30d", "dry": true}), "invalid_json"),
    ] {
        let (status, answer) = post_json(&url, body.to_string()).await?;
        assert_eq!(
            (status.as_u16(), answer["error"]["code"].as_str()),
            (400, Some(code)),
            "{body}"
        );
    }
    assert_eq!(task_count(&env).await?, 5);

    // The metrics counted it, by state and by table (the process's counters: the test of
    // the retention policy beside this one purges failed tasks, never complete ones).
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics"))
    };
    assert_eq!(value("tasker_purged_tasks_total{state=\"complete\"}"), 48.0);
    assert!(value("tasker_purged_rows_total{table=\"steps\"}") >= 192.0);
    assert!(value("tasker_purged_rows_total{table=\"edges\"}") >= 144.0);
    assert!(value("tasker_purged_bytes_total") >= rest.bytes.unwrap() as f64);
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retention_policy_purges_on_its_own() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.retention.complete = "never".into();
    env.config.retention.error = "1h".into();
    env.config.retention.interval_ms = 1_000;
    env.config.retention.batch = 7;
    env.config.retention.pause_ms = 0;
    env.config.retention.busy_percent = 100;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let done = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    worker.stop().await;
    let old = copy_finished_task(
        &env.config.database_url,
        done.id,
        30,
        chrono::Duration::hours(2),
    )
    .await?;
    // Failed ones go after an hour; complete ones never (the young one would stay anyway).
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    sqlx::query("UPDATE tasks SET state = 'error' WHERE id = ANY($1)")
        .bind(&old)
        .execute(&mut db)
        .await?;
    let old_complete = copy_finished_task(
        &env.config.database_url,
        done.id,
        2,
        chrono::Duration::hours(3),
    )
    .await?;
    // Waits on the orchestrator's events (a sweep every 200 ms) for the retention pass.
    o.until(Duration::from_secs(30), "the retention pass", || async {
        Ok((task_count(&env).await? == 3).then_some(()))
    })
    .await?;
    for id in &old[..3] {
        match o.client.task(*id, None).await {
            Err(Error::Api { status: 410, .. }) => {}
            other => panic!("expected 410, got {other:?}"),
        }
    }
    // The complete ones stay, old or young.
    for id in [done.id, old_complete[0], old_complete[1]] {
        assert_eq!(o.client.task(id, None).await?.state, "complete");
    }
    let tombstones: Vec<String> = sqlx::query_scalar("SELECT DISTINCT state FROM purged_tasks")
        .fetch_all(&mut db)
        .await?;
    assert_eq!(tombstones, ["error"]);
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}
