//! Replaying or discarding dead letters by filter reaches only what its token may: a write token
//! may not start one, an admin token of one namespace matches only the dead letters whose tasks
//! are all of it (another team's are neither counted nor touched), and a filter naming another
//! namespace is refused.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::letters::{park, result_of};
use tasker_orchestration::store::Scope;

use crate::common::{call, pair, register, token, with_tokens};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_operation_reaches_only_its_tokens_namespaces() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let mut kept = o.dead_letters_kept();
    for ns in ["sec_a", "sec_b"] {
        assert_eq!(register(&o, &root, &pair(ns)).await.0, StatusCode::CREATED);
        let req = json!({"namespace": ns, "name": "pair", "context": {"value": 1}});
        let (status, _, task) = call(&o, Method::POST, "/v1/tasks", &root, Some(req)).await;
        assert_eq!(status, StatusCode::CREATED, "{task}");
        let task_id: uuid::Uuid = task["id"].as_str().unwrap_or_default().parse()?;
        let step: uuid::Uuid =
            sqlx::query_scalar("SELECT id FROM steps WHERE task_id = $1 AND name = 'first'")
                .bind(task_id)
                .fetch_one(o.shared.store.pool())
                .await?;
        park(
            &env.config,
            &result_of(task_id, step, json!({"v": 1})),
            "parked",
            None,
        )
        .await?;
    }
    kept.take(2, Duration::from_secs(20)).await?;
    let writer = token(&o, "a-writer", Scope::Write, Some("sec_a")).await?;
    let admin_a = token(&o, "a-admin", Scope::Admin, Some("sec_a")).await?;
    let discard = |filter: Value, dry_run: bool| json!({"action": "discard", "filter": filter, "dry_run": dry_run, "reason": "cleanup"});

    let (status, code, _) = call(
        &o,
        Method::POST,
        "/v1/operations",
        &writer,
        Some(discard(json!({}), true)),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let (status, code, _) = call(
        &o,
        Method::POST,
        "/v1/operations",
        &admin_a,
        Some(discard(json!({"namespace": "sec_b"}), true)),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let (status, _, count) = call(
        &o,
        Method::POST,
        "/v1/operations",
        &admin_a,
        Some(discard(json!({}), true)),
    )
    .await;
    assert_eq!(
        (status, &count["matched"]),
        (StatusCode::OK, &json!(1)),
        "{count}"
    );

    let (status, _, op) = call(
        &o,
        Method::POST,
        "/v1/operations",
        &admin_a,
        Some(discard(json!({}), false)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{op}");
    let path = format!("/v1/operations/{}", op["id"].as_str().unwrap_or_default());
    let done = o
        .until(Duration::from_secs(30), "the discard done", || async {
            let (_, _, op) = call(&o, Method::GET, &path, &admin_a, None).await;
            anyhow::Ok(Some(op).filter(|op| op["state"] == "complete"))
        })
        .await?;
    assert_eq!(
        (&done["acted"], &done["skipped"]),
        (&json!(1), &json!(0)),
        "{done}"
    );
    // Another team's dead letter is still there.
    let (_, _, left) = call(&o, Method::GET, "/v1/dead-letters", &root, None).await;
    let left = left["dead_letters"].as_array().cloned().unwrap_or_default();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["namespaces"], json!(["sec_b"]));
    o.stop().await;
    env.cleanup().await
}
