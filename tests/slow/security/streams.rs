//! One live stream of several tasks (`GET /v1/events?tasks=…`) shows only the tasks its token
//! covers: another team's task is named `missing` (`forbidden`) and none of its data is sent,
//! while the token's own tasks stream as usual.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::{call, pair, register, token, with_tokens};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_several_tasks_sends_only_the_tokens_own() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let mut ids = Vec::new();
    for ns in ["sec_a", "sec_b"] {
        assert_eq!(register(&o, &root, &pair(ns)).await.0, StatusCode::CREATED);
        let req =
            json!({"namespace": ns, "name": "pair", "context": {"secret": format!("{ns}-data")}});
        let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &root, Some(req)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        ids.push(body["id"].as_str().unwrap_or_default().to_owned());
    }
    let a = token(
        &o,
        "a-reader",
        tasker_orchestration::store::Scope::Read,
        Some("sec_a"),
    )
    .await?;
    let mut resp = reqwest::Client::new()
        .get(format!("{}/v1/events?tasks={},{}", o.url(), ids[1], ids[0]))
        .bearer_auth(&a)
        .send()
        .await?;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !text.contains("sec_a-data") {
            match resp.chunk().await? {
                Some(chunk) => text.push_str(&String::from_utf8_lossy(&chunk)),
                None => break,
            }
        }
        anyhow::Ok(())
    })
    .await??;
    assert!(text.contains("event: missing"), "{text}");
    assert!(
        text.contains(&format!("\"task_id\":\"{}\"", ids[1])),
        "{text}"
    );
    assert!(text.contains("\"code\":\"forbidden\""), "{text}");
    assert!(
        !text.contains("sec_b-data"),
        "another team's context leaked: {text}"
    );
    assert_eq!(text.matches("event: snapshot").count(), 1, "{text}");
    o.stop().await;
    env.cleanup().await
}
