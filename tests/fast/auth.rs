//! API tokens: an orchestrator that requires them refuses to start without one, then answers
//! each route only to a token whose scope covers it (JSON 401/403 with stable codes otherwise),
//! leaves `/health` and `/ready` open, and a worker and the CLI with a token work as before.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv, workspace_binary};
use tasker_orchestration::Orchestrator;
use tasker_shared::config::AuthMode;

/// Status, error code (if any) and body of a request with `token`.
async fn call(
    o: &RunningOrchestrator,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, String, Value, reqwest::header::HeaderMap) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", o.url()));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("orchestrator reachable");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let text = resp.text().await.unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(json!({ "text": text }));
    let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
    (status, code, body, headers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_needs_tokens_on_any_address_or_an_explicit_off() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // The default, whatever the address: loopback (the demo's) included.
    env.config.orchestrator.auth = tasker_shared::config::OrchestratorConfig::default().auth;
    for bind in ["127.0.0.1:8080", "0.0.0.0:8080"] {
        env.config.orchestrator.bind = bind.into();
        let refused = Orchestrator::start(env.config.clone())
            .await
            .expect_err("no tokens: refused");
        let message = refused.to_string();
        assert!(
            message.contains("requires tokens") && message.contains("token create"),
            "{bind}: {message}"
        );
    }
    env.config.orchestrator.auth = AuthMode::Off;
    Orchestrator::start(env.config.clone()).await?;
    env.cleanup().await
}

/// An admin token named `root`, created as an operator would, with the server binary.
fn root_token(env: &TestEnv) -> anyhow::Result<String> {
    let created = std::process::Command::new(workspace_binary("tasker-orchestrator")?)
        .args(["token", "create", "root", "--scope", "admin"])
        .env("DATABASE_URL", &env.config.database_url)
        .env("TASKER_DATABASE_URL", &env.config.database_url)
        .output()?;
    anyhow::ensure!(created.status.success(), "{created:?}");
    Ok(String::from_utf8(created.stdout)?.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_scope_reaches_what_it_may_and_nothing_more() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    // Contexts above 64 bytes travel by reference: the worker fetches them with its token.
    env.config.orchestrator.inline_max_bytes = 64;
    assert!(
        Orchestrator::start(env.config.clone()).await.is_err(),
        "tokens required and none exists"
    );

    // The first token, created as an operator would, with the server binary.
    let admin = root_token(&env)?;
    assert!(admin.starts_with("tsk_") && admin.len() == 68, "{admin}");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT hash FROM api_tokens WHERE name = 'root'")
        .fetch_one(&sqlx::PgPool::connect(&env.config.database_url).await?)
        .await?;
    assert_eq!(stored.len(), 32, "only a SHA-256 is stored");
    assert!(!stored.windows(4).any(|w| w == b"tsk_"));

    let o = env.orchestrator().await?;
    let mut tokens = std::collections::HashMap::new();
    for (name, scope) in [("reader", "read"), ("writer", "write")] {
        let (status, _, body, _) = call(
            &o,
            Method::POST,
            "/v1/tokens",
            Some(&admin),
            Some(json!({"name": name, "scope": scope})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        tokens.insert(name, body["token"].as_str().unwrap().to_owned());
    }
    let (read, write) = (tokens["reader"].as_str(), tokens["writer"].as_str());
    let task = json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 6}});

    // Open to anyone.
    for path in ["/health", "/ready"] {
        let (status, ..) = call(&o, Method::GET, path, None, None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    // No token, or one that is not a token.
    for token in [None, Some("tsk_nope"), Some("")] {
        let (status, code, _, headers) = call(&o, Method::GET, "/v1/tasks", token, None).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::UNAUTHORIZED, "unauthenticated"),
            "{token:?}"
        );
        assert_eq!(headers["www-authenticate"], "Bearer");
    }
    let (status, code, ..) = call(&o, Method::GET, "/metrics", None, None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    // Each scope: what it may, and the first thing it may not.
    for (token, method, path, body, expected) in [
        (read, Method::GET, "/v1/tasks", None, StatusCode::OK),
        (read, Method::GET, "/metrics", None, StatusCode::OK),
        (read, Method::GET, "/v1/dead-letters", None, StatusCode::OK),
        (
            read,
            Method::POST,
            "/v1/tasks",
            Some(task.clone()),
            StatusCode::FORBIDDEN,
        ),
        (read, Method::GET, "/v1/tokens", None, StatusCode::FORBIDDEN),
        (
            write,
            Method::POST,
            "/v1/tasks",
            Some(task.clone()),
            StatusCode::CREATED,
        ),
        (
            write,
            Method::POST,
            "/v1/dead-letters/1/replay",
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            write,
            Method::DELETE,
            "/v1/dead-letters/1",
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            write,
            Method::POST,
            "/v1/tokens",
            Some(json!({"name": "x", "scope": "admin"})),
            StatusCode::FORBIDDEN,
        ),
        (
            admin.as_str(),
            Method::POST,
            "/v1/dead-letters/1/replay",
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            admin.as_str(),
            Method::GET,
            "/v1/tokens",
            None,
            StatusCode::OK,
        ),
        // The engine's clock: anyone reads it; moving it reaches every task's timers (admin
        // of every namespace), and only an orchestrator in test mode lets it move.
        (read, Method::GET, "/v1/clock", None, StatusCode::OK),
        (
            write,
            Method::POST,
            "/v1/clock/advance",
            Some(json!({"by": "7d"})),
            StatusCode::FORBIDDEN,
        ),
        (
            write,
            Method::POST,
            "/v1/clock/skip",
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            admin.as_str(),
            Method::POST,
            "/v1/clock/advance",
            Some(json!({"by": "7d"})),
            StatusCode::CONFLICT,
        ),
        (
            admin.as_str(),
            Method::POST,
            "/v1/clock/skip",
            None,
            StatusCode::CONFLICT,
        ),
    ] {
        let (status, code, body, _) = call(&o, method.clone(), path, Some(token), body).await;
        assert_eq!(status, expected, "{method} {path}: {body}");
        if status == StatusCode::FORBIDDEN {
            assert_eq!(code, "forbidden");
            assert!(body["error"]["details"]["needed"].is_string(), "{body}");
        }
    }
    // The listing never shows a token.
    let (_, _, listed, _) = call(&o, Method::GET, "/v1/tokens", Some(&admin), None).await;
    assert_eq!(
        listed["tokens"].as_array().map(Vec::len),
        Some(3),
        "{listed}"
    );
    assert!(!listed.to_string().contains("tsk_"), "{listed}");
    let (status, code, ..) = call(
        &o,
        Method::POST,
        "/v1/tokens",
        Some(&admin),
        Some(json!({"name": "reader", "scope": "read"})),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "token_name_taken")
    );

    // A worker with a write token runs a task whose context it must fetch from the API.
    env.config.worker.api_token = Some(write.to_owned());
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let client = tasker_client::Client::with_token(&o.url(), Some(write));
    let created = client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "linear")
                .context(json!({"value": 6, "padding": "x".repeat(200)})),
        )
        .await?;
    let done = client.wait(created.id, Duration::from_secs(30)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));

    // The CLI: with a token it works; without, exit 4 and the API's reason.
    let tasker = workspace_binary("tasker")?;
    let listed = std::process::Command::new(&tasker)
        .args(["--url", &o.url(), "list"])
        .env("TASKER_TOKEN", read)
        .output()?;
    assert!(listed.status.success(), "{listed:?}");
    assert!(String::from_utf8(listed.stdout)?.contains(&created.id.to_string()));
    let refused = std::process::Command::new(&tasker)
        .args(["--url", &o.url(), "list"])
        .env_remove("TASKER_TOKEN")
        .output()?;
    assert_eq!(refused.status.code(), Some(4), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unauthenticated"));

    // An expired token is refused like an unknown one, whatever its scope.
    let (status, _, expiring, _) = call(
        &o,
        Method::POST,
        "/v1/tokens",
        Some(&admin),
        Some(json!({"name": "brief", "scope": "admin", "expires_in_seconds": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{expiring}");
    let brief = expiring["token"].as_str().unwrap().to_owned();
    sqlx::query(
        "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'brief'",
    )
    .execute(o.shared.store.pool())
    .await?;
    // (The orchestrator never saw it: no cached trust to wait out.)
    let (status, code, ..) = call(&o, Method::GET, "/v1/tasks", Some(&brief), None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );
    for bad in [json!(0), json!(-1), json!(10 * 366 * 86_400)] {
        let (status, code, ..) = call(
            &o,
            Method::POST,
            "/v1/tokens",
            Some(&admin),
            Some(json!({"name": "bad", "scope": "read", "expires_in_seconds": bad})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(
            matches!(code.as_str(), "invalid_expiry" | "invalid_json"),
            "{bad}: {code}"
        );
    }

    // A revoked token is refused at once on the orchestrator that revoked it.
    let (status, ..) = call(&o, Method::DELETE, "/v1/tokens/reader", Some(&admin), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, code, ..) = call(&o, Method::GET, "/v1/tasks", Some(read), None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// A token scoped to one namespace reads the tasks that send a step there (a worker fetching a
/// context or parent results carried by reference), not others; it cannot register a template
/// that sends steps to a namespace it does not cover, nor report a worker serving one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_token_reaches_the_steps_routed_to_its_namespace_only() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    env.config.orchestrator.templates = vec![
        tasker::templates("rust"),
        tasker::repo_root().join("tests/fixtures/task_templates/polyglot"),
    ];
    // The orchestrator's own start needs a token to exist.
    let admin = root_token(&env)?;
    let o = env.orchestrator().await?;
    let (status, _, body, _) = call(
        &o,
        Method::POST,
        "/v1/tokens",
        Some(&admin),
        Some(json!({"name": "py", "scope": "write", "namespaces": ["python_examples"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let py = body["token"].as_str().unwrap().to_owned();
    let create =
        |name: &str, ns: &str| json!({"namespace": ns, "name": name, "context": {"value": 1}});
    let (_, _, relay, _) = call(
        &o,
        Method::POST,
        "/v1/tasks",
        Some(&admin),
        Some(create("relay", "polyglot")),
    )
    .await;
    let (_, _, linear, _) = call(
        &o,
        Method::POST,
        "/v1/tasks",
        Some(&admin),
        Some(create("linear", "rust_examples")),
    )
    .await;
    let relay = relay["id"].as_str().unwrap().to_owned();
    let linear = linear["id"].as_str().unwrap().to_owned();
    let (status, _, body, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{relay}"),
        Some(&py),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a step of polyglot/relay runs in python_examples: {body}"
    );
    let (_, _, steps, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{relay}/steps"),
        Some(&admin),
        None,
    )
    .await;
    let step = steps["steps"][0]["id"].as_str().unwrap().to_owned();
    let (status, _, body, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{relay}/steps/{step}/parent_results"),
        Some(&py),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, code, _, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{linear}"),
        Some(&py),
        None,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );

    // A step's recorded inputs (`tasker replay`) of another team's task: refused, and a step
    // that does not exist is refused alike (nothing told about what the task holds).
    for step in ["double", "no_such_step"] {
        let (status, code, _, _) = call(
            &o,
            Method::GET,
            &format!("/v1/tasks/{linear}/steps/{step}/inputs"),
            Some(&py),
            None,
        )
        .await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "inputs of {step}"
        );
    }

    // Registering a template that sends a step to rust_examples, and a worker report for it.
    let template = json!({"namespace": "python_examples", "name": "sneaky", "version": "1",
        "steps": [{"name": "s", "namespace": "rust_examples", "handler": "double"}]});
    let (status, code, _, _) =
        call(&o, Method::POST, "/v1/templates", Some(&py), Some(template)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let report = json!({"name": "w", "language": "python", "version": "1", "host": "h", "pid": 1,
        "namespaces": ["rust_examples"], "handlers": ["double"], "concurrency": 1,
        "heartbeat_ms": 5000, "started_at": "2026-01-01T00:00:00Z"});
    let (status, code, _, _) = call(
        &o,
        Method::PUT,
        &format!("/v1/workers/{}", uuid::Uuid::now_v7()),
        Some(&py),
        Some(report),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    o.stop().await;
    env.cleanup().await
}
