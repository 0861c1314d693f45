//! An operation by filter reaches only what its token covers: its filter is refused for a
//! namespace the token does not cover, it matches only the tasks of the namespaces the token
//! covers, another team's token neither sees nor cancels it, a read token cannot start one, and
//! an operation whose token is revoked stops before its next batch.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::RunningOrchestrator;
use tasker_orchestration::store::Scope;

use crate::common::{call, pair, register, token, with_tokens};

/// Creates `n` tasks of `namespace/pair` as `token`: with no worker of that namespace, they
/// stay running.
async fn running(o: &RunningOrchestrator, token: &str, namespace: &str, n: usize) {
    for i in 0..n {
        let req = json!({"namespace": namespace, "name": "pair", "context": {"value": i}});
        let (status, _, body) = call(o, Method::POST, "/v1/tasks", token, Some(req)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
}

/// Tasks of `namespace` in `state`.
async fn count(o: &RunningOrchestrator, namespace: &str, state: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM tasks WHERE namespace = $1 AND state = $2")
            .bind(namespace)
            .bind(state)
            .fetch_one(o.shared.store.pool())
            .await?,
    )
}

/// Waits until operation `id`, read as `token`, passes `check`; returns it.
async fn until_op(
    o: &RunningOrchestrator,
    token: &str,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let path = format!("/v1/operations/{id}");
    o.until(Duration::from_secs(30), what, || async {
        let (status, _, body) = call(o, Method::GET, &path, token, None).await;
        anyhow::ensure!(status == StatusCode::OK, "{body}");
        Ok(check(&body).then_some(body))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_reaches_only_the_namespaces_its_token_covers() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_a"), pair("sec_b")] {
        assert_eq!(register(&o, &root, &yaml).await.0, StatusCode::CREATED);
    }
    running(&o, &root, "sec_a", 3).await;
    running(&o, &root, "sec_b", 2).await;
    let a = token(&o, "a-writer", Scope::Write, Some("sec_a")).await?;
    let b = token(&o, "b-writer", Scope::Write, Some("sec_b")).await?;
    let reader = token(&o, "reader", Scope::Read, None).await?;
    let cancel = json!({"action": "cancel", "reason": "incident 7"});

    let (status, code, _) = call(
        &o,
        Method::POST,
        "/v1/operations",
        &reader,
        Some(cancel.clone()),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let other = json!({"action": "cancel", "filter": {"namespace": "sec_b"}});
    let (status, code, body) = call(&o, Method::POST, "/v1/operations", &a, Some(other)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    assert_eq!(body["error"]["details"]["namespace"], "sec_b", "{body}");

    let dry = json!({"action": "cancel", "dry_run": true});
    let (status, _, body) = call(&o, Method::POST, "/v1/operations", &a, Some(dry)).await;
    assert_eq!(
        (status, &body["matched"]),
        (StatusCode::OK, &json!(3)),
        "{body}"
    );
    let (status, _, op) = call(&o, Method::POST, "/v1/operations", &a, Some(cancel)).await;
    assert_eq!(
        (status, &op["matched"]),
        (StatusCode::CREATED, &json!(3)),
        "{op}"
    );
    let id = op["id"].as_str().unwrap_or_default().to_owned();
    let done = until_op(&o, &a, &id, "the operation's end", |op| {
        op["state"] == "complete"
    })
    .await?;
    assert_eq!(done["acted"], 3, "{done}");
    assert_eq!(count(&o, "sec_a", "cancelled").await?, 3);
    assert_eq!(
        count(&o, "sec_b", "running").await?,
        2,
        "another team's tasks"
    );

    // Another team's token neither sees nor stops it; one of every namespace sees it.
    let path = format!("/v1/operations/{id}");
    let (status, code, _) = call(&o, Method::GET, &path, &b, None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "operation_not_found")
    );
    let (status, _, list) = call(&o, Method::GET, "/v1/operations", &b, None).await;
    assert_eq!(
        (status, &list["operations"]),
        (StatusCode::OK, &json!([])),
        "{list}"
    );
    let (status, code, _) = call(&o, Method::POST, &format!("{path}/cancel"), &b, None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "operation_not_found")
    );
    let (status, _, list) = call(&o, Method::GET, "/v1/operations", &root, None).await;
    assert_eq!(
        (status, &list["operations"][0]["id"]),
        (StatusCode::OK, &json!(id))
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_whose_token_is_revoked_stops_before_its_next_batch() -> anyhow::Result<()> {
    let (mut env, root) = with_tokens().await?;
    // A task a batch, resting 99 times as long as each took: time to revoke in between.
    env.config.operations.batch = 1;
    env.config.operations.busy_percent = 1;
    let o = env.orchestrator().await?;
    assert_eq!(
        register(&o, &root, &pair("sec_a")).await.0,
        StatusCode::CREATED
    );
    running(&o, &root, "sec_a", 6).await;
    let c = token(&o, "c-writer", Scope::Write, Some("sec_a")).await?;
    let cancel = json!({"action": "cancel"});
    let (status, _, op) = call(&o, Method::POST, "/v1/operations", &c, Some(cancel)).await;
    assert_eq!(
        (status, &op["matched"]),
        (StatusCode::CREATED, &json!(6)),
        "{op}"
    );
    let id = op["id"].as_str().unwrap_or_default().to_owned();
    until_op(&o, &root, &id, "a first batch", |op| {
        op["acted"].as_u64() >= Some(1)
    })
    .await?;
    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/c-writer", &root, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let failed = until_op(&o, &root, &id, "the operation stopped", |op| {
        op["state"] != "running"
    })
    .await?;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["note"]
            .as_str()
            .is_some_and(|n| n.contains("revoked")),
        "{failed}"
    );
    let acted = failed["acted"].as_i64().unwrap_or_default();
    assert!((1..6).contains(&acted), "{failed}");
    assert_eq!(count(&o, "sec_a", "cancelled").await?, acted);
    assert_eq!(count(&o, "sec_a", "running").await?, 6 - acted);
    o.stop().await;
    env.cleanup().await
}
