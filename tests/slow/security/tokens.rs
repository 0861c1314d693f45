//! Tokens' lifetimes hold: a token never outlives the token that minted it and is revoked with
//! it; a cached token is never taken past its expiry; a broker user and a worker's record stay
//! with the token (by id) they were bound to, not with whoever reuses its name.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::RunningOrchestrator;
use uuid::Uuid;

use crate::common::{call, with_tokens};

/// Mints a token through the API as `by`: its answer.
async fn mint(o: &RunningOrchestrator, by: &str, body: Value) -> anyhow::Result<Value> {
    let (status, _, answer) = call(o, Method::POST, "/v1/tokens", by, Some(body)).await;
    anyhow::ensure!(status == StatusCode::CREATED, "{status}: {answer}");
    Ok(answer)
}

fn secret(answer: &Value) -> String {
    answer["token"].as_str().unwrap_or_default().to_owned()
}

async fn status_of(o: &RunningOrchestrator, token: &str) -> StatusCode {
    call(o, Method::GET, "/v1/tasks", token, None).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_never_outlives_its_minter_and_is_revoked_with_it() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let temp = mint(
        &o,
        &root,
        json!({"name": "temp", "scope": "admin", "expires_in_seconds": 3600}),
    )
    .await?;
    let kid = mint(&o, &secret(&temp), json!({"name": "kid", "scope": "admin"})).await?;
    assert_eq!(kid["expires_at"], temp["expires_at"], "{kid}");
    let grandkid = mint(
        &o,
        &secret(&kid),
        json!({"name": "grandkid", "scope": "read"}),
    )
    .await?;
    let longer = mint(
        &o,
        &secret(&temp),
        json!({"name": "longer", "scope": "read", "expires_in_seconds": 7200}),
    )
    .await?;
    assert_eq!(longer["expires_at"], temp["expires_at"], "{longer}");
    for t in [&kid, &grandkid, &longer] {
        assert_eq!(status_of(&o, &secret(t)).await, StatusCode::OK);
    }
    // Revoking the minter revokes what it minted, down the tree, at once.
    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/temp", &root, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for t in [&temp, &kid, &grandkid, &longer] {
        assert_eq!(
            status_of(&o, &secret(t)).await,
            StatusCode::UNAUTHORIZED,
            "{t}"
        );
    }
    let (_, _, listed) = call(&o, Method::GET, "/v1/tokens", &root, None).await;
    let names: Vec<&str> = listed["tokens"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["root"], "{listed}");

    // A token trusted from the cache stops at its expiry, not seconds later.
    let brief = mint(
        &o,
        &root,
        json!({"name": "brief", "scope": "read", "expires_in_seconds": 2}),
    )
    .await?;
    assert_eq!(status_of(&o, &secret(&brief)).await, StatusCode::OK);
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(brief["expires_at"].clone())?;
    let left = (expires - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(20)).await;
    assert_eq!(
        status_of(&o, &secret(&brief)).await,
        StatusCode::UNAUTHORIZED
    );
    // Made-up tokens are refused alike, well-formed or not.
    for made_up in [format!("tsk_{}", "0".repeat(64)), "tsk_nope".to_owned()] {
        assert_eq!(status_of(&o, &made_up).await, StatusCode::UNAUTHORIZED);
    }
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_user_and_a_worker_record_stay_with_their_token_not_its_name() -> anyhow::Result<()>
{
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let a_admin = mint(
        &o,
        &root,
        json!({"name": "a-admin", "scope": "admin", "namespaces": ["sec_a"]}),
    )
    .await?;
    let b_admin = mint(
        &o,
        &root,
        json!({"name": "b-admin", "scope": "admin", "namespaces": ["sec_b"]}),
    )
    .await?;
    let first = mint(
        &o,
        &secret(&a_admin),
        json!({"name": "worker-x", "scope": "write"}),
    )
    .await?;
    assert_eq!(first["broker_user"], "worker-x", "{first}");
    assert!(o.shared.store.sender("worker-x").await?.is_some());
    let worker = Uuid::now_v7();
    let path = format!("/v1/workers/{worker}");
    let report = serde_json::to_value(tasker::worker_report("x", &["double"]))?;
    let mut in_a = report.clone();
    in_a["namespaces"] = json!(["sec_a"]);
    let (status, _, body) = call(&o, Method::PUT, &path, &secret(&first), Some(in_a)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Team a rotates it away; team b takes the name.
    let (status, _, _) = call(
        &o,
        Method::DELETE,
        "/v1/tokens/worker-x",
        &secret(&a_admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let second = mint(
        &o,
        &secret(&b_admin),
        json!({"name": "worker-x", "scope": "write"}),
    )
    .await?;
    assert_eq!(second.get("broker_user"), None, "{second}");
    // Team a's broker user speaks for no one now: its results move nothing of b's.
    assert!(o.shared.store.sender("worker-x").await?.is_none());
    // Nor does b's token take over a's worker's record.
    let mut in_b = report.clone();
    in_b["namespaces"] = json!(["sec_b"]);
    let (status, code, _) = call(&o, Method::PUT, &path, &secret(&second), Some(in_b)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    // Team a's admin may rotate its own name back onto its broker user.
    let (status, _, _) = call(
        &o,
        Method::DELETE,
        "/v1/tokens/worker-x",
        &secret(&b_admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let third = mint(
        &o,
        &secret(&a_admin),
        json!({"name": "worker-x", "scope": "write"}),
    )
    .await?;
    assert_eq!(third["broker_user"], "worker-x", "{third}");

    // A worker that serves no namespace is shown to tokens of every namespace only.
    let lonely = Uuid::now_v7();
    let mut none = report;
    none["namespaces"] = json!([]);
    let (status, _, _) = call(
        &o,
        Method::PUT,
        &format!("/v1/workers/{lonely}"),
        &root,
        Some(none),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let listed = |token: String| {
        let o = &o;
        async move {
            let (_, _, body) = call(o, Method::GET, "/v1/workers", &token, None).await;
            body["workers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w["id"].as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        }
    };
    assert!(listed(root.clone()).await.contains(&lonely.to_string()));
    assert!(!listed(secret(&a_admin)).await.contains(&lonely.to_string()));
    o.stop().await;
    env.cleanup().await
}
