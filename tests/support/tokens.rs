//! Tokens for tests of an orchestrator that requires them, as the demo and cluster mode run it:
//! tokens made straight in the store, a root token the harness speaks as, requests sent as a
//! token.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker_orchestration::store::{NewToken, Scope, Store};
use tasker_shared::config::AuthMode;
use tasker_shared::namespaces::Patterns;

use crate::{RunningOrchestrator, TestEnv};

/// A token named `name` of `scope` for `namespaces` (`None`: every namespace), made in the
/// store (no minter). A broker user of the same name speaks for it.
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

/// [`make_token`] in `o`'s database.
pub async fn token(
    o: &RunningOrchestrator,
    name: &str,
    scope: Scope,
    namespaces: Option<&str>,
) -> anyhow::Result<String> {
    make_token(&o.shared.store, name, scope, namespaces).await
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

impl TestEnv {
    /// Makes this environment's orchestrators require tokens, with a root token `name` (admin,
    /// every namespace) made before they start (an orchestrator refuses to start without one);
    /// the harness's own client and workers speak as it. Returns it.
    pub async fn require_tokens(&mut self, name: &str) -> anyhow::Result<String> {
        self.config.orchestrator.auth = AuthMode::Tokens;
        let store = Store::connect(&self.config.database_url, 2).await?;
        let root = make_token(&store, name, Scope::Admin, None).await?;
        store.pool().close().await;
        self.config.worker.api_token = Some(root.clone());
        Ok(root)
    }
}
