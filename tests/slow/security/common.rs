//! What the attacks share: an orchestrator that requires tokens with a root token, tokens of a
//! namespace, requests as a token, templates on the Rust fixture handlers.
#![allow(dead_code)]

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv};
use tasker_orchestration::store::{NewToken, Scope, Store};
use tasker_shared::config::AuthMode;
use tasker_shared::namespaces::Patterns;

/// A two-step template of `namespace` on the Rust fixture handlers.
pub fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// A token named `name` of `scope` for `namespaces` (`None`: every namespace), made in the
/// test's database.
pub async fn token(
    o: &RunningOrchestrator,
    name: &str,
    scope: Scope,
    namespaces: Option<&str>,
) -> anyhow::Result<String> {
    make_token(&o.shared.store, name, scope, namespaces).await
}

/// A token made directly in the store (no minter).
pub async fn make_token(
    store: &Store,
    name: &str,
    scope: Scope,
    namespaces: Option<&str>,
) -> anyhow::Result<String> {
    let patterns = namespaces.map(Patterns::parse).transpose()?;
    Ok(store
        .create_token(&NewToken {
            name,
            scope,
            namespaces: patterns.as_ref(),
            expires_at: None,
            created_by: Some("test"),
            minter: None,
        })
        .await?
        .token)
}

/// A test environment whose orchestrators require tokens, and its root token (admin, every
/// namespace), made before the orchestrator starts (it refuses to start without one); the
/// orchestrator's own test client and workers use it.
pub async fn with_tokens() -> anyhow::Result<(TestEnv, String)> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let root = make_token(&store, "root", Scope::Admin, None).await?;
    store.pool().close().await;
    // The harness's own client (`RunningOrchestrator::client`, `wait`) speaks as root.
    env.config.worker.api_token = Some(root.clone());
    Ok((env, root))
}

/// Status, error code and body of a request as `token`.
pub async fn call(
    o: &RunningOrchestrator,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, String, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}{path}", o.url()))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("orchestrator reachable");
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(json!({ "text": text }));
    let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
    (status, code, body)
}

/// Registers template `yaml` as `token`: status and error code.
pub async fn register(o: &RunningOrchestrator, token: &str, yaml: &str) -> (StatusCode, String) {
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/templates", o.url()))
        .bearer_auth(token)
        .header("content-type", "application/yaml")
        .body(yaml.to_owned())
        .send()
        .await
        .expect("orchestrator reachable");
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

/// A client of `o` that sends `token`.
pub fn client(o: &RunningOrchestrator, token: &str) -> tasker_client::Client {
    tasker_client::Client::with_token(&o.url(), Some(token))
}
