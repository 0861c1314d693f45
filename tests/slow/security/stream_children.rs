//! A task's stream with its children's merged in (`children=true`) against a reader whose token
//! covers the parent's namespace and not the child's: it reads the parent's own chunks, as JSON
//! and as events, and nothing its child (of another team's namespace) streamed; a token that
//! covers both reads both.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker_broker::Broker;
use tasker_orchestration::store::Scope;
use uuid::Uuid;

use super::step_streams::{chunk, publish};
use crate::common::{call, pair, register, token, with_tokens};

/// `pair` of sec_a, then a child `pair` of sec_b.
const PARENT: &str = "namespace: sec_a
name: parent
version: 1.0.0
steps:
  - name: first
    handler: double
  - name: kid
    depends_on: [first]
    child: {template: pair, namespace: sec_b, version: 1.0.0}
";

/// The texts of a page's chunks.
fn texts(page: &Value) -> Vec<&str> {
    page["chunks"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["text"].as_str()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_stream_holds_no_child_of_a_namespace_the_token_does_not_cover()
-> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_b"), PARENT.to_owned()] {
        assert_eq!(register(&o, &root, &yaml).await.0, StatusCode::CREATED);
    }
    let req = json!({"namespace": "sec_a", "name": "parent", "context": {"value": 1}});
    let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &root, Some(req)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let parent: Uuid = body["id"].as_str().unwrap_or_default().parse()?;
    let worker = env.rust_worker_for(&["sec_a", "sec_b"]);
    assert_eq!(o.wait(parent).await?.state, "complete");
    worker.stop().await;
    let steps = o.client.steps(parent).await?;
    let step = |name: &str| steps.iter().find(|s| s.name == name).cloned();
    let first = step("first").map(|s| s.id).expect("a first step");
    let kid = step("kid").and_then(|s| s.child?["task_id"].as_str()?.parse::<Uuid>().ok());
    let kid = kid.expect("the kid step started a child");
    let kid_first = o.client.steps(kid).await?;
    let kid_first = kid_first.iter().find(|s| s.name == "first").expect("first");

    // Each team's worker streams into its own step (the child's first, then the parent's).
    let prefix = env.config.queue_prefix.clone();
    for (role, ns, task, step, text) in [
        ("b", "sec_b", kid, kid_first.id, "secret of b"),
        ("a", "sec_a", parent, first, "said by a"),
    ] {
        let (user, url) = env.worker_user(role, &[ns])?;
        token(&o, &user, Scope::Write, Some(ns)).await?;
        let team = Broker::connect(&url, &prefix, &format!("sec-children-{role}")).await?;
        let mut end = chunk(task, step, 1, 1, "");
        (end.text, end.end) = (None, true);
        let body = serde_json::to_vec(&[chunk(task, step, 1, 0, text), end])?;
        publish(&team, &prefix, &body, &user).await?;
        team.close().await;
    }
    let path = format!("/v1/tasks/{parent}/stream?children=true");
    let page = o
        .until(std::time::Duration::from_secs(30), "both kept", || async {
            let (_, _, page) = call(&o, Method::GET, &path, &root, None).await;
            Ok((page["next"] == 4).then_some(page))
        })
        .await?;
    assert_eq!(texts(&page), ["secret of b", "said by a"], "{page}");

    // A reader of sec_a: the parent's own chunk only, as JSON and as events.
    let reader = token(&o, "a-reader", Scope::Read, Some("sec_a")).await?;
    let (status, _, page) = call(&o, Method::GET, &path, &reader, None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(texts(&page), ["said by a"], "{page}");
    assert_eq!(
        (page["next"].as_i64(), page["complete"].as_bool()),
        (Some(4), Some(true))
    );
    let events = reqwest::Client::new()
        .get(format!("{}{path}", o.url()))
        .bearer_auth(&reader)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    assert_eq!(events.status(), StatusCode::OK);
    let events = events.text().await?;
    assert!(events.contains("said by a"), "{events}");
    assert!(!events.contains("secret of b"), "{events}");
    assert!(events.contains("event: end"), "{events}");
    // Nor the child's own stream.
    let (status, _, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{kid}/stream"),
        &reader,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    o.stop().await;
    env.cleanup().await
}
