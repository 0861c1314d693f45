//! Trust boundaries, tried as an attacker would, against a real orchestrator, RabbitMQ and
//! PostgreSQL: a result moves only the step it names, and only for a sender that may serve that
//! step's namespace (`results`); one team's broker user and token reach nothing of another
//! team's (`teams`); the API refuses browsers from other sites and foreign `Host` names whatever
//! the auth mode (`browsers`); and what a request may cost is bounded before it is spent
//! (`costs`).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::RunningOrchestrator;

#[path = "trust/browsers.rs"]
mod browsers;
#[path = "trust/costs.rs"]
mod costs;
#[path = "trust/results.rs"]
mod results;
#[path = "trust/teams.rs"]
mod teams;

/// A two-step template of `namespace` on the Rust fixture handlers.
fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// Registers the `pair` templates of namespaces `trust_a` and `trust_b`.
async fn register_pairs(o: &RunningOrchestrator) -> anyhow::Result<()> {
    for ns in ["trust_a", "trust_b"] {
        o.client
            .register_template(&pair(ns), Some("pair.yaml"), None)
            .await?;
    }
    Ok(())
}

/// A request as a browser on another site would send it, or naming another `Host`.
async fn raw(
    o: &RunningOrchestrator,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", o.url()));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body.to_owned()).send().await.expect("reachable");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(json!(null)))
}
