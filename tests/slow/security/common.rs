//! What the attacks share: an orchestrator that requires tokens with a root token, tokens of a
//! namespace, requests as a token, templates on the Rust fixture handlers.
#![allow(dead_code)]

use reqwest::StatusCode;
use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv};

/// A two-step template of `namespace` on the Rust fixture handlers.
pub fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

pub use tasker::tokens::{call, make_token, token};

/// A test environment whose orchestrators require tokens, and its root token (admin, every
/// namespace); the orchestrator's own test client and workers use it.
pub async fn with_tokens() -> anyhow::Result<(TestEnv, String)> {
    let mut env = TestEnv::new().await?;
    let root = env.require_tokens("root").await?;
    Ok((env, root))
}

/// The step named `first` of `task` (as the orchestrator's own client reads it).
pub async fn first_step(
    o: &RunningOrchestrator,
    task: uuid::Uuid,
) -> anyhow::Result<tasker_client::Step> {
    o.client
        .steps(task)
        .await?
        .into_iter()
        .find(|s| s.name == "first")
        .ok_or_else(|| anyhow::anyhow!("no first step"))
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

/// Tasks of namespace `ns` in the test's database.
pub async fn tasks_in(o: &RunningOrchestrator, ns: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM tasks WHERE namespace = $1")
            .bind(ns)
            .fetch_one(o.shared.store.pool())
            .await?,
    )
}

/// A client of `o` that sends `token`.
pub fn client(o: &RunningOrchestrator, token: &str) -> tasker_client::Client {
    tasker_client::Client::with_token(&o.url(), Some(token))
}

/// Publishes `body` as `broker`'s user through the results exchange, routed to `queue` (the
/// results queue or the streams queue), as a worker does, with `properties` (a `user_id`
/// RabbitMQ checks, or none); an unroutable message fails.
pub async fn publish_as_worker(
    broker: &tasker_broker::Broker,
    prefix: &str,
    queue: &str,
    body: &[u8],
    properties: lapin::BasicProperties,
) -> anyhow::Result<()> {
    let channel = broker.channel().await?;
    channel
        .basic_publish(
            tasker_broker::topology::results_exchange(prefix)
                .as_str()
                .into(),
            queue.into(),
            lapin::options::BasicPublishOptions {
                mandatory: true,
                ..lapin::options::BasicPublishOptions::default()
            },
            body,
            properties,
        )
        .await?
        .await?;
    Ok(())
}
