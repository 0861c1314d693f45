//! The REST API: creation with idempotency, reads, listing, cancel, and bad input that gets a
//! clear 4xx and changes nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tasker::{Cluster, post_json as post};

async fn count_tasks(cluster: &Cluster) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(cluster.orchestrator.shared.store.pool())
        .await?)
}

async fn get(url: &str) -> anyhow::Result<(StatusCode, Value)> {
    let resp = reqwest::get(url).await?;
    let status = resp.status();
    Ok((status, resp.json().await?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_key_returns_the_same_task() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let url = format!("{}/v1/tasks", cluster.orchestrator.url());
    let body = json!({"namespace": "rust_examples", "name": "linear", "version": "1.0.0",
                      "context": {"value": 1}, "idempotency_key": "order-42"});
    let (s1, t1) = post(&url, body.to_string()).await?;
    let (s2, t2) = post(&url, body.to_string()).await?;
    assert_eq!(s1, StatusCode::CREATED);
    assert_eq!(s2, StatusCode::OK);
    assert_eq!(t1["id"], t2["id"]);
    assert_eq!(count_tasks(&cluster).await?, 1);

    // The same key with another context or template is a different request: 409, nothing new.
    let other_context = json!({"namespace": "rust_examples", "name": "linear", "version": "1.0.0",
                               "context": {"value": 2}, "idempotency_key": "order-42"});
    let other_template = json!({"namespace": "rust_examples", "name": "diamond",
                                "context": {"value": 1}, "idempotency_key": "order-42"});
    for body in [other_context, other_template] {
        let (status, err) = post(&url, body.to_string()).await?;
        assert_eq!(status, StatusCode::CONFLICT, "{err}");
        assert_eq!(err["error"]["code"], "idempotency_key_reused");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(t1["id"].as_str().unwrap_or("?")),
            "{err}"
        );
    }
    assert_eq!(count_tasks(&cluster).await?, 1);
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_errors_and_write_nothing() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let base = cluster.orchestrator.url();
    let tasks = format!("{base}/v1/tasks");
    let cases: Vec<(String, StatusCode, &str)> = vec![
        ("{not json".into(), StatusCode::BAD_REQUEST, "invalid_json"),
        (json!({"namespace": "rust_examples"}).to_string(), StatusCode::BAD_REQUEST, "invalid_json"),
        (json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 1}, "extra": 1}).to_string(),
            StatusCode::BAD_REQUEST, "invalid_json"),
        (json!({"namespace": "rust_examples", "name": "nope"}).to_string(), StatusCode::NOT_FOUND, "unknown_template"),
        (json!({"namespace": "rust_examples", "name": "linear", "version": "9.9.9"}).to_string(),
            StatusCode::NOT_FOUND, "unknown_template"),
        (json!({"namespace": "rust_examples", "name": "linear", "context": {"value": "six"}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY, "context_schema_violation"),
        (json!({"namespace": "rust_examples", "name": "linear", "context": {}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY, "context_schema_violation"),
        (json!({"namespace": "rust_examples", "name": "linear", "context": [1, 2]}).to_string(),
            StatusCode::BAD_REQUEST, "invalid_context"),
        (json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 1, "pad": "x".repeat(2 << 20)}}).to_string(),
            StatusCode::PAYLOAD_TOO_LARGE, "body_too_large"),
    ];
    for (body, status, code) in cases {
        let shown: String = body.chars().take(80).collect();
        let (s, v) = post(&tasks, body).await?;
        assert_eq!(s, status, "{shown}: {v}");
        assert_eq!(v["error"]["code"], code, "{shown}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{shown}: a message explains the error");
        assert!(
            !message.to_lowercase().contains("sql"),
            "no internals leak: {message}"
        );
    }
    let (s, v) = post(
        &tasks,
        json!({"namespace": "rust_examples", "name": "linear", "context": {"value": "six"}})
            .to_string(),
    )
    .await?;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("/value"),
        "{v}"
    );
    assert_eq!(
        count_tasks(&cluster).await?,
        0,
        "no rejected request wrote a task"
    );

    let (s, v) = get(&format!("{base}/v1/tasks/not-a-uuid")).await?;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_id"))
    );
    let missing = uuid::Uuid::now_v7();
    let (s, v) = get(&format!("{base}/v1/tasks/{missing}")).await?;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("task_not_found"))
    );
    let (s, _) = post(&format!("{base}/v1/tasks/{missing}/cancel"), "").await?;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = get(&format!("{base}/v1/tasks?state=finished")).await?;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_state"))
    );
    let (s, _) = get(&format!("{base}/v1/tasks?limit=0")).await?;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, v) = get(&format!("{base}/v1/tasks/{missing}?wait=-1")).await?;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_wait"))
    );
    let (s, _) = get(&format!("{base}/v2/nothing")).await?;
    assert_eq!(s, StatusCode::NOT_FOUND);
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_filters_and_pages_and_shows_steps() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let mut ids = Vec::new();
    for v in 0..5 {
        ids.push(
            o.run_task("rust_examples", "linear", json!({"value": v}))
                .await?
                .id,
        );
    }
    let failed = o
        .run_task("rust_examples", "permanent_failure", json!({}))
        .await?;
    let base = o.url();
    let (_, page) = get(&format!("{base}/v1/tasks?state=complete&limit=3")).await?;
    let first: Vec<&str> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(first.len(), 3);
    assert_eq!(first[0], ids[4].to_string(), "newest first");
    let next = page["next_before"].as_str().unwrap();
    let (_, page2) = get(&format!(
        "{base}/v1/tasks?state=complete&limit=3&before={next}"
    ))
    .await?;
    let second: Vec<&str> = page2["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(second, vec![ids[1].to_string(), ids[0].to_string()]);
    assert!(page2["next_before"].is_null());
    let (_, errors) = get(&format!("{base}/v1/tasks?state=error")).await?;
    assert_eq!(errors["tasks"][0]["id"], failed.id.to_string());
    let (_, other_ns) = get(&format!("{base}/v1/tasks?namespace=elsewhere")).await?;
    assert_eq!(other_ns["tasks"].as_array().unwrap().len(), 0);
    let (_, by_name) = get(&format!("{base}/v1/tasks?name=permanent_failure")).await?;
    let by_name: Vec<&str> = by_name["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(by_name, vec![failed.id.to_string()]);

    // By a value in the context (containment) and by creation time, through the Rust client.
    let listed = |q: tasker_client::TaskQuery| async move {
        let page = o.client.tasks(&q).await?;
        anyhow::Ok(page.tasks.into_iter().map(|t| t.id).collect::<Vec<_>>())
    };
    let by_value = tasker_client::TaskQuery {
        context: Some(json!({"value": 3})),
        ..Default::default()
    };
    assert_eq!(listed(by_value).await?, vec![ids[3]]);
    let third = o.client.task(ids[2], None).await?.created_at;
    let since = tasker_client::TaskQuery {
        created_after: Some(third),
        name: Some("linear".into()),
        ..Default::default()
    };
    assert_eq!(listed(since).await?, vec![ids[4], ids[3], ids[2]]);
    let until = tasker_client::TaskQuery {
        created_before: Some(third),
        ..Default::default()
    };
    assert_eq!(listed(until).await?, vec![ids[1], ids[0]]);
    for (query, code) in [
        ("created_after=yesterday", "invalid_time"),
        ("created_before=2026-13-01T00:00:00Z", "invalid_time"),
        ("context=%7Bnot%20json", "invalid_context_filter"),
        ("context=%5B1%5D", "invalid_context_filter"),
    ] {
        let (s, v) = get(&format!("{base}/v1/tasks?{query}")).await?;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some(code)),
            "{query}: {v}"
        );
    }

    let (s, steps) = get(&format!("{base}/v1/tasks/{}/steps", ids[4])).await?;
    assert_eq!(s, StatusCode::OK);
    let steps = steps["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert_eq!(steps[3]["name"], "halve");
    assert_eq!(steps[3]["result"], json!({"value": 162}));
    for key in ["dispatched_at", "started_at", "finished_at", "processed_at"] {
        assert!(steps[3][key].is_string(), "{key} recorded");
    }
    let (_, history) = get(&format!("{base}/v1/tasks/{}/history", ids[4])).await?;
    let history = history["transitions"].as_array().unwrap();
    assert_eq!(history.first().unwrap()["to"], "running");
    assert_eq!(history.last().unwrap()["to"], "complete");
    assert_eq!(
        history.len(),
        2 + 4 * 2,
        "task created/complete + enqueued/completed per step"
    );

    let (_, templates) = get(&format!("{base}/v1/templates")).await?;
    assert!(
        templates["templates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "linear")
    );
    let (s, _) = get(&format!("{base}/health")).await?;
    assert_eq!(s, StatusCode::OK);
    let (s, ready) = get(&format!("{base}/ready")).await?;
    assert_eq!(s, StatusCode::OK, "{ready}");
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    assert!(metrics.contains("tasker_tasks_created_total"), "{metrics}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_returns_when_the_task_finishes_not_at_the_deadline() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let t = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 200})),
        )
        .await?;
    let started = std::time::Instant::now();
    let done = o
        .client
        .task(t.id, Some(std::time::Duration::from_secs(20)))
        .await?;
    assert_eq!(done.state, "complete");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let unfinished = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 5000})),
        )
        .await?;
    let still = o
        .client
        .task(unfinished.id, Some(std::time::Duration::from_millis(300)))
        .await?;
    assert_eq!(
        still.state, "running",
        "a wait that runs out returns the running task"
    );
    cluster.shutdown().await
}

/// A request of any method, body as given; the answer's status and its body parsed as JSON (an
/// answer that is not JSON fails the test).
async fn call(
    method: reqwest::Method,
    url: &str,
    body: Option<String>,
) -> anyhow::Result<(StatusCode, Value)> {
    let mut req = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        req = req.header("content-type", "application/json").body(body);
    }
    let resp = req.send().await?;
    let status = resp.status();
    let text = resp.text().await?;
    let v = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{status} {url}: the body is not JSON ({e}): {text:?}"))?;
    Ok((status, v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_json_4xx_with_stable_codes_and_write_nothing() -> anyhow::Result<()> {
    use reqwest::Method;
    let cluster = Cluster::start().await?;
    let base = cluster.orchestrator.url();
    let tasks = format!("{base}/v1/tasks");
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let create = |context: Value, key: Option<&str>| {
        let mut body = json!({"namespace": "rust_examples", "name": "linear", "context": context});
        if let Some(k) = key {
            body["idempotency_key"] = json!(k);
        }
        Some(body.to_string())
    };
    let id = uuid::Uuid::now_v7();
    let cases: Vec<(Method, String, Option<String>, StatusCode, &str)> = vec![
        (
            Method::POST,
            tasks.clone(),
            create(json!({"value": 1, "note": "a\u{0}b"}), None),
            StatusCode::BAD_REQUEST,
            "invalid_context",
        ),
        (
            Method::POST,
            tasks.clone(),
            create(json!({"value": 1, "k\u{0}": 1}), None),
            StatusCode::BAD_REQUEST,
            "invalid_context",
        ),
        (
            Method::POST,
            tasks.clone(),
            create(json!({"value": 1, "deep": deep}), None),
            StatusCode::BAD_REQUEST,
            "invalid_context",
        ),
        (
            Method::POST,
            tasks.clone(),
            create(json!({"value": 1}), Some("key\u{0}")),
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
        ),
        (
            Method::GET,
            format!("{tasks}?namespace=a%00b"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            Method::GET,
            format!("{tasks}?limit=ten"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            Method::GET,
            format!("{tasks}/{id}?wait=soon"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            Method::GET,
            format!("{tasks}/{id}?wait=-1"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_wait",
        ),
        (
            Method::GET,
            format!("{tasks}/%FF%FE"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_path",
        ),
        (
            Method::GET,
            format!("{tasks}/not-a-uuid/steps"),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            Method::DELETE,
            tasks.clone(),
            None,
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            Method::PUT,
            format!("{tasks}/{id}"),
            None,
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            Method::GET,
            format!("{base}/v2/nothing"),
            None,
            StatusCode::NOT_FOUND,
            "no_such_route",
        ),
    ];
    for (method, url, body, status, code) in cases {
        let (s, v) = call(method.clone(), &url, body).await?;
        assert_eq!(s, status, "{method} {url}: {v}");
        assert_eq!(v["error"]["code"], code, "{method} {url}: {v}");
    }
    assert_eq!(count_tasks(&cluster).await?, 0);
    cluster.shutdown().await
}
