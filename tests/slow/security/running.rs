//! A running report (`POST /v1/workers/{id}/running`) marks only what its sender may serve: a
//! token's report through another token's worker is refused, a step of a namespace the
//! worker does not serve is left alone even if its id is known, and a revoked token marks
//! nothing.

use reqwest::{Method, StatusCode};
use serde_json::json;
use tasker::RunningOrchestrator;
use tasker_orchestration::store::Scope;
use uuid::Uuid;

use crate::common::{call, pair, register, token, with_tokens};

/// The enqueued `first` step of the task created in `namespace`.
async fn first_step(o: &RunningOrchestrator, namespace: &str) -> anyhow::Result<Uuid> {
    Ok(sqlx::query_scalar(
        "SELECT s.id FROM steps s JOIN tasks t ON t.id = s.task_id
         WHERE t.namespace = $1 AND s.name = 'first' AND s.state = 'enqueued'",
    )
    .bind(namespace)
    .fetch_one(o.shared.store.pool())
    .await?)
}

/// Whether the step is marked running.
async fn marked(o: &RunningOrchestrator, step: Uuid) -> anyhow::Result<bool> {
    Ok(sqlx::query_scalar(
        "SELECT running_attempt IS NOT DISTINCT FROM attempt FROM steps WHERE id = $1",
    )
    .bind(step)
    .fetch_one(o.shared.store.pool())
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_report_marks_only_steps_its_worker_and_token_serve() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for ns in ["sec_a", "sec_b"] {
        assert_eq!(register(&o, &root, &pair(ns)).await.0, StatusCode::CREATED);
        let req = json!({"namespace": ns, "name": "pair", "context": {"value": 1}});
        let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &root, Some(req)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (step_a, step_b) = (
        first_step(&o, "sec_a").await?,
        first_step(&o, "sec_b").await?,
    );
    let a = token(&o, "a-writer", Scope::Write, Some("sec_a")).await?;
    let b = token(&o, "b-writer", Scope::Write, Some("sec_b")).await?;
    let worker = Uuid::now_v7();
    let mut report = tasker::worker_report("a-worker", &["double"]);
    report.namespaces = vec!["sec_a".into()];
    let path = format!("/v1/workers/{worker}");
    let (status, _, body) = call(
        &o,
        Method::PUT,
        &path,
        &a,
        Some(serde_json::to_value(&report)?),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let running = format!("{path}/running");
    let of = |step: Uuid| json!({"steps": [{"step_id": step, "attempt": 1, "started_at": chrono::Utc::now()}]});

    // Another team's step, through a's own worker: nothing marked.
    let (status, _, body) = call(&o, Method::POST, &running, &a, Some(of(step_b))).await;
    assert_eq!(
        (status, &body["recorded"]),
        (StatusCode::OK, &json!(0)),
        "{body}"
    );
    assert!(!marked(&o, step_b).await?);
    // Nor is anything said of it: an attempt it is not at is named `over` only in a's own
    // namespaces (a worker could otherwise probe another team's steps).
    let late =
        json!({"steps": [{"step_id": step_b, "attempt": 9, "started_at": chrono::Utc::now()}]});
    let (status, _, body) = call(&o, Method::POST, &running, &a, Some(late)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.get("over").is_none(), "{body}");
    let late =
        json!({"steps": [{"step_id": step_a, "attempt": 9, "started_at": chrono::Utc::now()}]});
    let (_, _, body) = call(&o, Method::POST, &running, &a, Some(late)).await;
    assert_eq!(
        body["over"],
        json!([step_a]),
        "its own step's attempt 9 is not open"
    );
    // b through a's worker: not b's worker.
    let (status, code, _) = call(&o, Method::POST, &running, &b, Some(of(step_b))).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "worker_not_found")
    );
    assert!(!marked(&o, step_b).await?);
    // A read token may not report at all.
    let reader = token(&o, "a-reader", Scope::Read, Some("sec_a")).await?;
    let (status, _, _) = call(&o, Method::POST, &running, &reader, Some(of(step_a))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!marked(&o, step_a).await?);
    // Revoked: refused, nothing marked.
    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/a-writer", &root, None).await;
    assert!(status.is_success());
    let (status, _, _) = call(&o, Method::POST, &running, &a, Some(of(step_a))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!marked(&o, step_a).await?);
    // Its own step by a live token of its own: marked.
    let a2 = token(&o, "a-writer-2", Scope::Write, Some("sec_a")).await?;
    let worker2 = Uuid::now_v7();
    let path2 = format!("/v1/workers/{worker2}");
    let (status, _, _) = call(
        &o,
        Method::PUT,
        &path2,
        &a2,
        Some(serde_json::to_value(&report)?),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = call(
        &o,
        Method::POST,
        &format!("{path2}/running"),
        &a2,
        Some(of(step_a)),
    )
    .await;
    assert_eq!(
        (status, &body["recorded"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    assert!(marked(&o, step_a).await?);
    o.stop().await;
    env.cleanup().await
}
