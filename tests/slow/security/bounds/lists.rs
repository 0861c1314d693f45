//! What lists and caps cost: a 100 KB context filter over large tasks answers within the
//! statement timeout; schedules per namespace, backfills per schedule and signals per task are
//! refused past their caps with the bound named; schedules and keys come a page at a time.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::TestEnv;
use tasker_client::CreateTask;

use super::{a_healthy_task_completes, call, orchestrator, refusal, stop};
use crate::common::pair;

/// A context filter: an array of the numbers below `n`, as JSON.
fn filter_of(n: u32) -> String {
    let items: Vec<u32> = (0..n).collect();
    json!({ "items": items }).to_string()
}

/// `GET {path}?context=` with `filter` in the query as a client would send it (its JSON
/// punctuation percent-encoded, its digits and commas as they are), over a connection of its
/// own: the status and the JSON answer (`null` if none), and how long the answer took.
async fn list_with_filter(server: &str, filter: &str) -> anyhow::Result<(u16, Value, Duration)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut query = String::with_capacity(filter.len() * 2);
    for c in filter.chars() {
        match c {
            '{' | '}' | '[' | ']' | '"' | ':' | ' ' => {
                query.push_str(&format!("%{:02X}", c as u32))
            }
            c => query.push(c),
        }
    }
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(server).await?;
    let head = format!(
        "GET /v1/tasks?context={query} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer)).await??;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).unwrap_or("0").parse()?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    Ok((
        status,
        serde_json::from_str(body).unwrap_or(Value::Null),
        took,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_kb_context_filter_over_ten_large_tasks_answers_within_the_statement_timeout()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let (o, url) = orchestrator(
        &env,
        &[
            ("TASKER_ORCHESTRATOR__MAX_CONTEXT_FILTER_BYTES", "262144"),
            ("TASKER_ORCHESTRATOR__LIST_TIMEOUT_MS", "1000"),
        ],
    )
    .await?;
    let server = url.trim_start_matches("http://").to_owned();
    o.client
        .register_template(&pair("bounds_ctx"), Some("pair.yaml"), None)
        .await?;
    // Ten tasks of about 250 kB of context each (no worker serves them: they stay running).
    let items: Vec<u32> = (0..40_000).collect();
    for value in 0..10 {
        let context = json!({"value": value, "items": items});
        o.client
            .create_task(&CreateTask::new("bounds_ctx", "pair").context(context))
            .await?;
    }
    // 100 kB: longer than any request target HTTP carries (64 KiB), refused at once.
    let filter = filter_of(19_000);
    assert!(filter.len() > 100_000, "{}", filter.len());
    let (status, _, took) = list_with_filter(&server, &filter).await?;
    println!("100 kB context filter: {status} in {took:?}");
    assert_eq!(status, 414);
    assert!(took < Duration::from_secs(1), "answered after {took:?}");
    // The largest a request carries (55 kB, the bound raised for it), and one within the
    // default bound (6 kB): each containment test over arrays of 40,000 costs PostgreSQL time
    // per task; the statement timeout (1 s) answers for them. PostgreSQL notices the timeout
    // between two rows, so the answer may come a row's work after it.
    for (n, within) in [
        (11_000, Duration::from_secs(3)),
        (1_500, Duration::from_millis(1_500)),
    ] {
        let filter = filter_of(n);
        let (status, answer, took) = list_with_filter(&server, &filter).await?;
        let kb = filter.len() / 1000;
        println!("{kb} kB context filter over 10 tasks of 250 kB: {status} in {took:?}");
        match status {
            200 => assert_eq!(answer["tasks"].as_array().map(Vec::len), Some(10)),
            503 => assert_eq!(
                refusal(&answer),
                ("query_timeout", "orchestrator.list_timeout_ms"),
                "{answer}"
            ),
            other => panic!("{other}: {answer}"),
        }
        assert!(
            took < within,
            "{kb} kB: answered after {took:?} (timeout 1 s)"
        );
    }
    // A small filter finds its task, and the GIN index serves containment.
    let page = o
        .client
        .tasks(&tasker_client::TaskQuery {
            namespace: Some("bounds_ctx".into()),
            context: Some(json!({"value": 3})),
            ..Default::default()
        })
        .await?;
    assert_eq!(page.tasks.len(), 1);
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let mut conn = db.acquire().await?;
    sqlx::query("SET enable_seqscan = off")
        .execute(&mut *conn)
        .await?;
    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN SELECT id FROM tasks WHERE context @> '{\"value\": 3}'")
            .fetch_all(&mut *conn)
            .await?;
    assert!(plan.join("\n").contains("tasks_context_paths"), "{plan:?}");
    drop(conn);
    db.close().await;
    a_healthy_task_completes(&mut env, &url).await?;
    stop(o).await?;
    env.cleanup().await
}

/// A schedule `name` of `namespace` firing nightly, as `POST /v1/schedules` takes it.
fn schedule(namespace: &str, name: &str, cron: &str) -> Option<(&'static str, String)> {
    let spec = json!({"namespace": namespace, "name": name, "template": "pair", "cron": cron});
    Some(("application/json", spec.to_string()))
}

/// Every item of a paged list at `url` (`key`), `limit` at a time; and how many pages it took.
async fn every_page(url: &str, key: &str, limit: usize) -> anyhow::Result<(Vec<Value>, usize)> {
    let (mut items, mut pages, mut after) = (Vec::new(), 0, None::<String>);
    loop {
        let mut req = reqwest::Client::new()
            .get(url)
            .query(&[("limit", limit.to_string())]);
        if let Some(a) = &after {
            req = req.query(&[("after", a)]);
        }
        let page: Value = req.send().await?.error_for_status()?.json().await?;
        pages += 1;
        let got = page[key].as_array().cloned().unwrap_or_default();
        assert!(got.len() <= limit);
        items.extend(got);
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return Ok((items, pages)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_backfills_and_signals_stop_at_their_caps() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let (o, url) = orchestrator(
        &env,
        &[
            ("TASKER_ORCHESTRATOR__MAX_SCHEDULES_PER_NAMESPACE", "3"),
            ("TASKER_ORCHESTRATOR__MAX_BACKFILLS_PER_HOUR", "2"),
            ("TASKER_ORCHESTRATOR__MAX_SIGNALS_PER_TASK", "3"),
        ],
    )
    .await?;
    let schedules = format!("{url}/v1/schedules");
    for ns in ["bounds_a", "bounds_b"] {
        o.client
            .register_template(&pair(ns), Some("pair.yaml"), None)
            .await?;
        for n in 1..=3 {
            let (status, answer) = call(
                Method::POST,
                &schedules,
                None,
                schedule(ns, &format!("s{n}"), "0 3 * * *"),
            )
            .await?;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
        }
    }
    let (status, answer) = call(
        Method::POST,
        &schedules,
        None,
        schedule("bounds_a", "s4", "0 3 * * *"),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(
        refusal(&answer),
        (
            "too_many_schedules",
            "orchestrator.max_schedules_per_namespace"
        )
    );
    // Changing one it has is not adding one.
    let (status, _) = call(
        Method::POST,
        &schedules,
        None,
        schedule("bounds_a", "s1", "0 4 * * *"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    // Backfills: two this hour, not a third.
    let backfill = format!("{url}/v1/schedules/bounds_a/s1/backfill");
    let range = json!({"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T12:00:00Z"}).to_string();
    for _ in 0..2 {
        let (status, answer) = call(
            Method::POST,
            &backfill,
            None,
            Some(("application/json", range.clone())),
        )
        .await?;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let (status, answer) = call(
        Method::POST,
        &backfill,
        None,
        Some(("application/json", range)),
    )
    .await?;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    assert_eq!(
        refusal(&answer),
        ("too_many_backfills", "orchestrator.max_backfills_per_hour")
    );
    signals_stop_at_their_cap(&o.client, &url).await?;
    every_list_comes_a_page_at_a_time(&env, &o.client, &url).await?;
    // The default bound of a context filter (8 KiB) refuses a larger one before reading it.
    let resp = reqwest::Client::new()
        .get(format!("{url}/v1/tasks"))
        .query(&[("context", filter_of(3_000))])
        .send()
        .await?;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let answer: Value = resp.json().await?;
    assert_eq!(
        refusal(&answer),
        (
            "context_filter_too_large",
            "orchestrator.max_context_filter_bytes"
        )
    );
    a_healthy_task_completes(&mut env, &url).await?;
    stop(o).await?;
    env.cleanup().await
}

/// Three signals to a task, not a fourth; the first again is still answered as it was.
async fn signals_stop_at_their_cap(
    client: &tasker_client::Client,
    url: &str,
) -> anyhow::Result<()> {
    // No worker serves bounds_a: the task runs and keeps its signals for a wait to come.
    let task = client
        .create_task(&CreateTask::new("bounds_a", "pair").context(json!({"value": 1})))
        .await?;
    let send = |n: u32| {
        let url = format!("{url}/v1/tasks/{}/signals/approved", task.id);
        let body = json!({"signal_id": format!("s-{n}"), "payload": n}).to_string();
        async move { call(Method::POST, &url, None, Some(("application/json", body))).await }
    };
    for n in 1..=3 {
        assert_eq!(send(n).await?.0, StatusCode::CREATED);
    }
    let (status, answer) = send(4).await?;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(
        refusal(&answer),
        ("too_many_signals", "orchestrator.max_signals_per_task")
    );
    assert_eq!(send(1).await?.0, StatusCode::OK);
    assert_eq!(client.signals(task.id).await?.len(), 3);
    Ok(())
}

/// Schedules, rate keys and concurrency keys, two a page: each exactly once, in order; the
/// Rust client follows the pages.
async fn every_list_comes_a_page_at_a_time(
    env: &TestEnv,
    client: &tasker_client::Client,
    url: &str,
) -> anyhow::Result<()> {
    let (all, pages) = every_page(&format!("{url}/v1/schedules"), "schedules", 2).await?;
    let names: Vec<String> = all
        .iter()
        .map(|s| {
            format!(
                "{}/{}",
                s["namespace"].as_str().unwrap_or(""),
                s["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    let expected: Vec<String> = ["bounds_a", "bounds_b"]
        .iter()
        .flat_map(|ns| (1..=3).map(move |n| format!("{ns}/s{n}")))
        .collect();
    assert_eq!(names, expected);
    assert!(pages >= 3, "{pages} pages");
    assert_eq!(client.schedules(None).await?.len(), 6);
    // Keys, as steps leave them: five of each, used at different times, two in use.
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    for i in 0..5 {
        sqlx::query(
            "INSERT INTO rate_limits (key, lim, per_ms, burst, used_at)
             VALUES ($1, 10, 1000, 10, now() - make_interval(secs => $2))",
        )
        .bind(format!("bounds-rate-{i}"))
        .bind(f64::from(i))
        .execute(&db)
        .await?;
        sqlx::query(
            "INSERT INTO concurrency_slots (key, lim, in_use, used_at)
             VALUES ($1, 5, $2, now() - make_interval(secs => $3))",
        )
        .bind(format!("bounds_a/pair:{i}"))
        .bind(if i % 2 == 1 { 1 } else { 0 })
        .bind(f64::from(i))
        .execute(&db)
        .await?;
    }
    db.close().await;
    let (rates, _) = every_page(&format!("{url}/v1/rate-limits"), "limits", 2).await?;
    let keys: Vec<&str> = rates.iter().filter_map(|r| r["key"].as_str()).collect();
    assert_eq!(
        keys,
        (0..5)
            .map(|i| format!("bounds-rate-{i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(client.rate_limits().await?.len(), 5);
    let (slots, _) = every_page(&format!("{url}/v1/concurrency-limits"), "limits", 2).await?;
    let keys: Vec<&str> = slots.iter().filter_map(|r| r["key"].as_str()).collect();
    // In use first (1, 3), then the others, each group most recently used first.
    let order = [1, 3, 0, 2, 4].map(|i| format!("bounds_a/pair:{i}"));
    assert_eq!(keys, order.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(client.concurrency_limits(None).await?.len(), 5);
    Ok(())
}
