//! Alert rules: only an admin token covering a namespace saves, replaces or removes a rule of
//! it (a rule's sink is called from the orchestrators' network), never another namespace's by
//! its name; a token lists and shows only its namespaces' rules; a rule whose token is revoked
//! is checked no more — it says why and sends nothing — while a live one goes on.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker_orchestration::store::Scope;

use crate::common::{call, token, with_tokens};

fn rule(namespace: &str) -> Value {
    // A sink nobody listens on: a rule that fired would record a failed delivery.
    json!({"namespace": namespace, "when": {"kind": "dead_letters"},
           "sink": {"kind": "slack", "url": "http://127.0.0.1:9/nobody"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_rule_is_its_namespaces_and_stops_with_its_savers_token() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let admin_a = token(&o, "admin-a", Scope::Admin, Some("sec_a")).await?;
    let admin_b = token(&o, "admin-b", Scope::Admin, Some("sec_b")).await?;
    let writer_a = token(&o, "writer-a", Scope::Write, Some("sec_a")).await?;

    // A writer may not save a rule, even of its own namespace: 403, nothing saved.
    let (status, code, _) = call(
        &o,
        Method::PUT,
        "/v1/alerts/a-rule",
        &writer_a,
        Some(rule("sec_a")),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    // An admin of sec_a: not of sec_b.
    let (status, _, _) = call(
        &o,
        Method::PUT,
        "/v1/alerts/b-rule",
        &admin_a,
        Some(rule("sec_b")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, body) = call(
        &o,
        Method::PUT,
        "/v1/alerts/a-rule",
        &admin_a,
        Some(rule("sec_a")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _, body) = call(
        &o,
        Method::PUT,
        "/v1/alerts/b-rule",
        &admin_b,
        Some(rule("sec_b")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // b may not take a's rule over by its name, move it, show it or remove it.
    for (method, body) in [
        (Method::PUT, Some(rule("sec_b"))),
        (Method::GET, None),
        (Method::DELETE, None),
    ] {
        let (status, _, answer) =
            call(&o, method.clone(), "/v1/alerts/a-rule", &admin_b, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {answer}");
    }
    // Each lists its own; a writer of sec_a reads sec_a's.
    for (t, own) in [
        (&admin_a, "a-rule"),
        (&admin_b, "b-rule"),
        (&writer_a, "a-rule"),
    ] {
        let (_, _, list) = call(&o, Method::GET, "/v1/alerts", t, None).await;
        let names: Vec<&str> = list["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["name"].as_str())
            .collect();
        assert_eq!(names, vec![own], "{list}");
    }
    let (_, _, a) = call(&o, Method::GET, "/v1/alerts/a-rule", &root, None).await;
    assert_eq!(a["namespace"], "sec_a", "a-rule stayed a's: {a}");

    // Revoked: a's rule is checked no more and says why; b's goes on being checked.
    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/admin-a", &root, None).await;
    assert!(status.is_success());
    let since = chrono::Utc::now();
    let (a, b) = o
        .until(
            std::time::Duration::from_secs(10),
            "both rules looked at",
            || async {
                let a = o.client.alert("a-rule").await?;
                let b = o.client.alert("b-rule").await?;
                let later =
                    |at: Option<chrono::DateTime<chrono::Utc>>| at.is_some_and(|at| at > since);
                let paused = a
                    .last_error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("not checked"));
                Ok((paused && later(b.checked_at)).then_some((a, b)))
            },
        )
        .await?;
    assert!(
        a.last_error
            .as_deref()
            .unwrap_or_default()
            .contains("revoked"),
        "{a:?}"
    );
    assert!(
        a.checked_at.is_none_or(|at| at <= since),
        "a's rule was checked after the revocation: {a:?}"
    );
    assert_eq!((a.sent, a.failed), (0, 0));
    assert_eq!(b.last_error, None, "{b:?}");
    o.stop().await;
    env.cleanup().await
}
