//! Rate keys are owned: a key read from a team's task context is that team's own (prefixed
//! with its namespace, listed only to its tokens), and a named key declared by one team cannot
//! be re-defined by another.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::RunningOrchestrator;
use tasker_orchestration::store::Scope;

use crate::common::{call, register, token, with_tokens};

const LIMITED: &str = "namespace: sec_b
name: limited
version: 1.0.0
steps:
  - name: first
    handler: double
    rate_limit: {key: /email, limit: 10, per: 1s}
  - name: second
    handler: add_ten
    depends_on: [first]
    rate_limit: {key: stripe, limit: 100, per: 1s}
";

async fn keys(o: &RunningOrchestrator, token: &str) -> Vec<String> {
    let (_, _, body) = call(o, Method::GET, "/v1/rate-limits", token, None).await;
    body["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["key"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teams_rate_keys_are_its_own() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let b = token(&o, "b-writer", Scope::Write, Some("sec_b")).await?;
    let a = token(&o, "a-writer", Scope::Write, Some("sec_a")).await?;
    assert_eq!(register(&o, &b, LIMITED).await.0, StatusCode::CREATED);
    let worker = env.rust_worker_for(&["sec_b"]);
    let req = json!({"namespace": "sec_b", "name": "limited",
                     "context": {"value": 4, "email": "carol@b.example"}});
    let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &b, Some(req)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let task = body["id"].as_str().unwrap_or_default().parse()?;
    assert_eq!(o.wait(task).await?.state, "complete");
    worker.stop().await;

    // b's keys: its customer's, namespaced, and the named key its template declared.
    let mine = keys(&o, &b).await;
    assert!(
        mine.contains(&"sec_b/carol@b.example".to_owned()),
        "{mine:?}"
    );
    assert!(mine.contains(&"stripe".to_owned()), "{mine:?}");
    // a sees none of them: not b's customer's e-mail, not b's named key.
    assert_eq!(keys(&o, &a).await, Vec::<String>::new());
    assert!(keys(&o, &root).await.len() >= 2);

    // a cannot re-define b's named key, nor pause it; the same numbers share it.
    let hog = |limit: &str| {
        format!(
            "namespace: sec_a\nname: hog{}\nversion: 1.0.0\nsteps:\n  - name: first\n    \
             handler: double\n    rate_limit: {{key: stripe, {limit}}}\n",
            limit.len()
        )
    };
    let (status, code) = register(&o, &a, &hog("limit: 1, per: 1h")).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "rate_key_owned")
    );
    let (status, _) = register(&o, &a, &hog("limit: 100, per: 1s")).await;
    assert_eq!(status, StatusCode::CREATED);
    let until = (chrono::Utc::now() + chrono::Duration::minutes(5)).to_rfc3339();
    let pause: Value = json!({"until": until});
    let (status, code, _) = call(
        &o,
        Method::POST,
        "/v1/rate-limits/stripe/pause",
        &a,
        Some(pause.clone()),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let (status, _, body) = call(
        &o,
        Method::POST,
        "/v1/rate-limits/stripe/pause",
        &b,
        Some(pause),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Now that a's template names it, a sees the shared key (and only that one of b's).
    assert_eq!(keys(&o, &a).await, ["stripe"]);
    o.stop().await;
    env.cleanup().await
}
