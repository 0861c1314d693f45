//! Webhooks: a token saves, shows, replaces or removes a webhook only of a namespace it covers
//! (never takes over another namespace's by its name); a request to a webhook is judged with
//! the token that saved it, looked up again each time (what that token may not start is
//! refused; once revoked, nothing is stored); a token is no substitute for a signature.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker_client::WebhookFormat;
use tasker_orchestration::store::Scope;
use tasker_orchestration::webhook_sign::sign;

use crate::common::{call, pair, register, tasks_in, token, with_tokens};

/// Two templates of `sec_a` started by the `a-hook` event: one stays in its namespace, the
/// other's step starts a task of `sec_b`.
const OWN: &str = "namespace: sec_a
name: own
version: 1.0.0
on:
  - event: a-hook
steps:
  - name: first
    handler: double
";
const REACHING: &str = "namespace: sec_a
name: reaching
version: 1.0.0
on:
  - event: a-hook
steps:
  - name: steal
    child: {namespace: sec_b, template: pair}
";
const SECRET: &str = "sec-a-shared-secret";

/// Posts `body` to webhook `name`, signed with `secret` (none: unsigned), with `bearer` if
/// given: status and answer.
async fn deliver(
    o: &tasker::RunningOrchestrator,
    name: &str,
    secret: Option<&str>,
    bearer: Option<&str>,
    body: &Value,
) -> (StatusCode, Value) {
    let bytes = serde_json::to_vec(body).expect("json");
    let mut req = reqwest::Client::new()
        .post(format!("{}/v1/webhooks/{name}", o.url()))
        .header("content-type", "application/json")
        .body(bytes.clone());
    if let Some(s) = secret {
        let now = chrono::Utc::now().timestamp();
        for (k, v) in sign(WebhookFormat::Generic, s, now, &bytes) {
            req = req.header(k, v);
        }
    }
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("orchestrator reachable");
    (resp.status(), resp.json().await.unwrap_or(Value::Null))
}

async fn events_in(o: &tasker::RunningOrchestrator, ns: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM events WHERE namespace = $1")
            .bind(ns)
            .fetch_one(o.shared.store.pool())
            .await?,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_its_namespaces_and_runs_with_its_savers_token() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_b"), OWN.to_owned(), REACHING.to_owned()] {
        let (status, code) = register(&o, &root, &yaml).await;
        assert!(status.is_success(), "{status} {code}");
    }
    let writer_a = token(&o, "writer-a", Scope::Write, Some("sec_a")).await?;
    let writer_b = token(&o, "writer-b", Scope::Write, Some("sec_b")).await?;
    let hook = |ns: &str| json!({ "namespace": ns, "secret": SECRET });
    let (status, _, _) = call(
        &o,
        Method::PUT,
        "/v1/webhooks/b-hook",
        &writer_b,
        Some(hook("sec_b")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);

    // sec_a's writer reaches none of sec_b's webhooks, nor makes one there.
    for (method, path, body) in [
        (Method::PUT, "/v1/webhooks/into-b", Some(hook("sec_b"))),
        (Method::PUT, "/v1/webhooks/b-hook", Some(hook("sec_a"))),
        (Method::GET, "/v1/webhooks/b-hook", None),
        (Method::DELETE, "/v1/webhooks/b-hook", None),
    ] {
        let (status, code, _) = call(&o, method.clone(), path, &writer_a, body).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{method} {path}"
        );
    }
    let (status, _, _) = call(
        &o,
        Method::PUT,
        "/v1/webhooks/a-hook",
        &writer_a,
        Some(hook("sec_a")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, _, listed) = call(&o, Method::GET, "/v1/webhooks", &writer_a, None).await;
    let names: Vec<&str> = listed["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(names, ["a-hook"], "{listed}");
    assert!(listed["webhooks"][0].get("secret").is_none(), "{listed}");

    // No token needed: its signature. Judged with writer-a's token: the template whose step
    // reaches sec_b starts nothing there.
    let (status, event) = deliver(&o, "a-hook", Some(SECRET), None, &json!({ "n": 1 })).await;
    assert_eq!(status, StatusCode::CREATED, "{event}");
    let outcome = |template: &str| {
        event["started"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| {
                s["template"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(template))
            })
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert!(outcome("sec_a/own")["task_id"].is_string(), "{event}");
    assert_eq!(
        outcome("sec_a/reaching")["refused"]["code"],
        "forbidden",
        "{event}"
    );
    assert_eq!(tasks_in(&o, "sec_b").await?, 0);

    // A token, even the root's, is no signature.
    let stored = events_in(&o, "sec_a").await?;
    let (status, answer) = deliver(&o, "a-hook", None, Some(&root), &json!({ "n": 2 })).await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (StatusCode::UNAUTHORIZED, &json!("bad_signature"))
    );

    // Its saver's token revoked: a signed request is refused and stores nothing.
    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/writer-a", &root, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, answer) = deliver(&o, "a-hook", Some(SECRET), None, &json!({ "n": 3 })).await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("forbidden")),
        "{answer}"
    );
    assert_eq!(events_in(&o, "sec_a").await?, stored);
    o.stop().await;
    env.cleanup().await
}
