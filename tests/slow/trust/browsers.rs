//! Browsers of other sites and foreign `Host` names (DNS rebinding) are refused, tokens or not;
//! the same request from the server's own page or from a program goes through.

use reqwest::{Method, StatusCode};
use tasker::TestEnv;
use tasker_shared::config::AuthMode;

use super::raw;

/// A request (method, path, headers, body) and the status and code it must get.
type Case<'a> = (
    Method,
    &'a str,
    Vec<(&'a str, &'a str)>,
    &'a str,
    StatusCode,
    &'a str,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_of_other_sites_and_foreign_hosts_are_refused_even_with_tokens_off()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    assert_eq!(env.config.orchestrator.auth, AuthMode::Off);
    let o = env.orchestrator().await?;
    let task = r#"{"namespace": "rust_examples", "name": "linear", "context": {"value": 1}}"#;
    let cases: Vec<Case> = vec![
        // The form-style request a page on another origin can send without a preflight.
        (
            Method::POST,
            "/v1/tasks",
            vec![
                ("content-type", "text/plain"),
                ("origin", "http://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            task,
            StatusCode::FORBIDDEN,
            "cross_origin",
        ),
        (
            Method::POST,
            "/v1/tasks",
            vec![("content-type", "text/plain")],
            task,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            Method::POST,
            "/v1/tasks",
            vec![
                ("content-type", "application/json"),
                ("origin", "http://127.0.0.1:1"),
            ],
            task,
            StatusCode::FORBIDDEN,
            "cross_origin",
        ),
        (
            Method::GET,
            "/v1/tasks",
            vec![("origin", "http://evil.example")],
            "",
            StatusCode::FORBIDDEN,
            "cross_origin",
        ),
        // DNS rebinding: a name pointed at this address.
        (
            Method::POST,
            "/v1/tasks",
            vec![
                ("content-type", "application/json"),
                ("host", "evil.example"),
            ],
            task,
            StatusCode::FORBIDDEN,
            "host_not_allowed",
        ),
        (
            Method::GET,
            "/ui/",
            vec![("host", "evil.example:8080")],
            "",
            StatusCode::FORBIDDEN,
            "host_not_allowed",
        ),
    ];
    for (method, path, headers, body, status, code) in cases {
        let (got, answer) = raw(&o, method.clone(), path, &headers, body).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{method} {path} {headers:?}: {answer}"
        );
    }
    assert!(
        o.client.tasks(&Default::default()).await?.tasks.is_empty(),
        "a refused request created a task"
    );
    // The same request from this server's own page, or from a program, goes through.
    let own = format!("http://{}", o.addr);
    let (status, _) = raw(
        &o,
        Method::POST,
        "/v1/tasks",
        &[("content-type", "application/json"), ("origin", &own)],
        task,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    o.stop().await;
    env.cleanup().await
}
