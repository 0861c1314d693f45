//! One team's credentials reach nothing of another team's: a worker's broker user reads only
//! its own namespaces' queues and writes only results; a token of one namespace gets 403 on
//! every route touching another; a worker whose credentials do not cover one of its namespaces
//! refuses to start, naming it.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::tokens::{call, token};
use tasker::{TestEnv, workspace_binary};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_orchestration::store::{NewToken, Scope};
use tasker_shared::config::AuthMode;
use tasker_shared::namespaces::Patterns;
use tasker_worker::{RustHost, Worker, WorkerOptions};

use super::{pair, register_pairs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_user_reads_only_its_own_namespaces_and_writes_only_results() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register_pairs(&o).await?;
    let prefix = env.config.queue_prefix.clone();
    let (_, url_a) = env.worker_user("a", &["trust_a"])?;
    let team_a = Broker::connect(&url_a, &prefix, "trust-a").await?;
    // It may not declare (configure) anything: the queues of its namespace it finds declared.
    team_a.declare(&["trust_a".to_owned()]).await?;
    drop(
        team_a
            .consume(&topology::steps_queue(&prefix, "trust_a"), "mine", 1)
            .await?,
    );
    let refused = team_a
        .consume(&topology::steps_queue(&prefix, "trust_b"), "theirs", 1)
        .await
        .expect_err("another namespace's queue");
    assert!(refused.is_refused(), "{refused}");
    assert!(refused.to_string().contains("trust_b"), "{refused}");
    // Nor may it put messages into a steps queue (the default exchange reaches every queue).
    let publisher = team_a.publisher().await?;
    let sent = publisher
        .publish_all(&[Outgoing {
            queue: topology::steps_queue(&prefix, "trust_b"),
            payload: b"[]".to_vec(),
        }])
        .await;
    assert!(sent.is_err(), "a worker user wrote to the default exchange");
    team_a.close().await;

    // A worker started with credentials that do not cover one of its namespaces refuses to
    // start, naming it.
    let mut config = env.config.clone();
    config.amqp_url = url_a;
    let worker = Worker::new(
        WorkerOptions::from_config(&config, vec!["trust_a".into(), "trust_b".into()]),
        std::sync::Arc::new(RustHost::new(tasker_worker_rust::registry(), 8)),
    );
    let refused = worker.check_access().await.expect_err("trust_b refused");
    assert!(refused.to_string().contains("\"trust_b\""), "{refused}");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_one_namespace_gets_403_on_every_route_touching_another() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // The first token, made before the orchestrator starts (it refuses to start without one).
    let root = env.require_tokens("root").await?;
    let o = &env.orchestrator().await?;
    let admin = tasker_client::Client::with_token(&o.url(), Some(&root));
    for ns in ["trust_a", "trust_b"] {
        admin
            .register_template(&pair(ns), Some("pair.yaml"), None)
            .await?;
    }
    // An operator of team a: every scope, namespace trust_a only.
    let ops_a = token(o, "ops-a", Scope::Admin, Some("trust_a")).await?;
    let create = |ns: &str| CreateTask::new(ns, "pair").context(json!({"value": 1}));
    let task_a = admin.create_task(&create("trust_a")).await?.id;
    let task_b = admin.create_task(&create("trust_b")).await?.id;
    let step_b = admin
        .steps(task_b)
        .await?
        .into_iter()
        .find(|s| s.name == "first")
        .expect("a first step")
        .id;
    let letter_b = o
        .shared
        .store
        .record_dead_letter(&tasker_orchestration::store::NewDeadLetter {
            queue: Some(topology::results_queue(&env.config.queue_prefix)),
            reason: "for the test".into(),
            body: b"{}".to_vec(),
            headers: json!({}),
            task_id: Some(task_b),
            step_id: Some(step_b),
            sender: None,
            task_ids: vec![task_b],
        })
        .await?;

    let b = format!("/v1/tasks/{task_b}");
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/v1/tasks".into(),
            Some(json!({"namespace": "trust_b", "name": "pair", "context": {"value": 1}})),
        ),
        (Method::GET, b.clone(), None),
        (Method::GET, format!("{b}/steps"), None),
        (Method::GET, format!("{b}/history"), None),
        (Method::GET, format!("{b}/events"), None),
        (
            Method::GET,
            format!("{b}/steps/{step_b}/parent_results"),
            None,
        ),
        (Method::POST, format!("{b}/cancel"), None),
        (Method::POST, format!("{b}/retry"), None),
        (Method::POST, format!("{b}/steps/first/retry"), None),
        (
            Method::POST,
            format!("{b}/steps/first/resolve"),
            Some(json!({"result": {"value": 1}})),
        ),
        (Method::GET, "/v1/tasks?namespace=trust_b".into(), None),
        (Method::GET, "/v1/templates?namespace=trust_b".into(), None),
        (Method::GET, "/v1/templates/trust_b/pair".into(), None),
        (Method::GET, format!("/v1/dead-letters/{letter_b}"), None),
        (
            Method::POST,
            format!("/v1/dead-letters/{letter_b}/replay"),
            None,
        ),
        (Method::DELETE, format!("/v1/dead-letters/{letter_b}"), None),
        (Method::GET, "/metrics".into(), None),
        (
            Method::POST,
            "/v1/tokens".into(),
            Some(json!({"name": "b-too", "scope": "read", "namespaces": ["trust_b"]})),
        ),
    ];
    for (method, path, body) in routes {
        let (status, code, answer) = call(o, method.clone(), &path, &ops_a, body).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{method} {path}: {answer}"
        );
    }
    // Registering another team's template, under any registered_by.
    let refused = reqwest::Client::new()
        .post(format!("{}/v1/templates?registered_by=team-b", o.url()))
        .bearer_auth(&ops_a)
        .header("content-type", "application/yaml")
        .body(pair("trust_b").replace("1.0.0", "2.0.0"))
        .send()
        .await?;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        admin
            .template("trust_b", "pair", None)
            .await?
            .template()?
            .version,
        "1.0.0",
        "no version was registered"
    );
    // Its own namespace: reachable, and what lists show is its own only.
    let (status, ..) = call(o, Method::GET, &format!("/v1/tasks/{task_a}"), &ops_a, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, page) = call(o, Method::GET, "/v1/tasks", &ops_a, None).await;
    let listed: Vec<&str> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec!["trust_a"]);
    let (_, _, letters) = call(o, Method::GET, "/v1/dead-letters", &ops_a, None).await;
    assert_eq!(letters["dead_letters"], json!([]));
    // What it registers is recorded as registered by its token, whatever it says.
    let v2 = reqwest::Client::new()
        .post(format!(
            "{}/v1/templates?registered_by=someone-else",
            o.url()
        ))
        .bearer_auth(&ops_a)
        .header("content-type", "application/yaml")
        .body(pair("trust_a").replace("1.0.0", "2.0.0"))
        .send()
        .await?
        .json::<Value>()
        .await?;
    assert_eq!(v2["registered_by"], "token:ops-a (as someone-else)");
    // Tokens it hands out stay within its own namespaces.
    let (status, _, created) = call(
        o,
        Method::POST,
        "/v1/tokens",
        &ops_a,
        Some(json!({"name": "a-reader", "scope": "read"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["namespaces"], json!(["trust_a"]));
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_token_does_not_cover_its_namespace_refuses_to_start_naming_it()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    let wrong = Patterns::parse("trust_a")?;
    let token = store
        .create_token(&NewToken {
            name: "worker-elsewhere",
            scope: Scope::Write,
            namespaces: Some(&wrong),
            expires_at: None,
            created_by: None,
            minter: None,
        })
        .await?
        .token;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    let out = tokio::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .arg("--templates")
        .arg(tasker::templates("rust"))
        .arg("--health-port")
        .arg("0")
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("TASKER_WORKER__ORCHESTRATOR_URL", o.url())
        .env("TASKER_WORKER__API_TOKEN", &token)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await??;
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("rust_examples") && said.contains("forbidden"),
        "the refusal names the namespace: {said}"
    );
    o.stop().await;
    env.cleanup().await
}
