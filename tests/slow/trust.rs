//! Trust boundaries, tried as an attacker would, against a real orchestrator, RabbitMQ and
//! PostgreSQL: a result moves only the step it names, and only for a sender that may serve that
//! step's namespace; one team's broker user and token reach nothing of another team's; the
//! API refuses browsers from other sites and foreign `Host` names whatever the auth mode; and
//! what a request may cost is bounded before it is spent.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::tokens::{call, token};
use tasker::{RunningOrchestrator, RunningWorker, TestEnv, workspace_binary};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_orchestration::store::{NewToken, Scope};
use tasker_shared::config::AuthMode;
use tasker_shared::namespaces::Patterns;
use tasker_shared::{Outcome, StepResult};
use tasker_worker::{RustHost, Worker, WorkerOptions};
use uuid::Uuid;

/// A two-step template of `namespace` on the Rust fixture handlers.
fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// Registers the `pair` templates of namespaces `trust_a` and `trust_b`.
async fn register_pairs(o: &RunningOrchestrator) -> anyhow::Result<()> {
    for ns in ["trust_a", "trust_b"] {
        o.client
            .register_template(&pair(ns), Some("pair.yaml"), None)
            .await?;
    }
    Ok(())
}

/// The first step of a task, as the API shows it.
async fn first_step(
    o: &RunningOrchestrator,
    task: Uuid,
) -> anyhow::Result<tasker_shared::api::Step> {
    Ok(o.client
        .steps(task)
        .await?
        .into_iter()
        .find(|s| s.name == "first")
        .expect("a first step"))
}

fn forged(task: Uuid, step: Uuid, attempt: u32) -> Vec<u8> {
    let r = StepResult {
        task_id: task,
        step_id: step,
        attempt,
        outcome: Outcome::Success {
            result: json!({"value": 1_000_000}),
        },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "someone-else".into(),
        traceparent: None,
    };
    serde_json::to_vec(&[r]).expect("a result encodes")
}

/// Publishes `payload` as `broker`'s user through the results exchange, as a worker does.
async fn publish_result(broker: &Broker, prefix: &str, payload: Vec<u8>) -> anyhow::Result<()> {
    let publisher = broker
        .publisher()
        .await?
        .via(&topology::results_exchange(prefix));
    publisher
        .publish_all(&[Outgoing {
            queue: topology::results_queue(prefix),
            payload,
        }])
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_results_change_nothing_and_are_dead_lettered_with_their_reason()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register_pairs(&o).await?;
    let prefix = env.config.queue_prefix.clone();
    // Each team: a broker user that may read only its namespace's steps, and the token of the
    // same name that says which namespaces its results may move.
    let (user_a, url_a) = env.worker_user("a", &["trust_a"])?;
    let (user_b, url_b) = env.worker_user("b", &["trust_b"])?;
    token(&o, &user_a, Scope::Write, Some("trust_a")).await?;
    token(&o, &user_b, Scope::Write, Some("trust_b")).await?;

    // No worker yet: each task's first step waits in flight, enqueued at attempt 1.
    let create = |ns: &str| CreateTask::new(ns, "pair").context(json!({"value": 3}));
    let task_a = o.client.create_task(&create("trust_a")).await?.id;
    let task_b = o.client.create_task(&create("trust_b")).await?.id;
    let step_b = first_step(&o, task_b).await?;
    assert_eq!((step_b.state.as_str(), step_b.attempt), ("enqueued", 1));

    let team_a = Broker::connect(&url_a, &prefix, "trust-a").await?;
    let team_b = Broker::connect(&url_b, &prefix, "trust-b").await?;
    let mut kept = o.dead_letters_kept();
    // A matching step with another task's id; another namespace's step named under the
    // sender's own task; the right step with a stale attempt; the right step and attempt from
    // a sender who may not serve its namespace.
    let forgeries = [
        (
            &team_b,
            forged(task_a, step_b.id, 1),
            "result_mismatch: step",
        ),
        (
            &team_a,
            forged(task_a, step_b.id, 1),
            "result_mismatch: step",
        ),
        (
            &team_b,
            forged(task_b, step_b.id, 0),
            "result_mismatch: attempt 0",
        ),
        (
            &team_a,
            forged(task_b, step_b.id, 1),
            "result_not_permitted",
        ),
    ];
    for (broker, payload, _) in &forgeries {
        publish_result(broker, &prefix, payload.clone()).await?;
    }
    let ids = kept.take(forgeries.len(), Duration::from_secs(20)).await?;
    let mut reasons = Vec::new();
    for id in ids {
        let letter = o.client.dead_letter(id).await?;
        assert!(letter.info.task_id.is_some(), "{letter:?}");
        reasons.push((
            letter.info.reason.clone(),
            letter.headers["x-tasker-sender"]
                .as_str()
                .map(str::to_owned),
        ));
    }
    for (broker, payload, reason) in &forgeries {
        let sender = broker.user().to_owned();
        let body: Value = serde_json::from_slice(payload)?;
        let found = reasons
            .iter()
            .any(|(r, s)| r.starts_with(reason) && s.as_deref() == Some(&sender));
        assert!(
            found,
            "no dead letter {reason:?} from {sender} for {body}: {reasons:?}"
        );
    }
    // Nothing moved.
    let after = first_step(&o, task_b).await?;
    assert_eq!(
        (after.state.as_str(), after.attempt, &after.result),
        ("enqueued", 1, &None)
    );
    assert_eq!(first_step(&o, task_a).await?.state, "enqueued");
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    for reason in ["result_mismatch", "result_not_permitted"] {
        assert!(
            metrics.contains(&format!(
                "tasker_results_rejected_total{{reason=\"{reason}\"}}"
            )),
            "{reason} not counted"
        );
    }

    // Each team's own worker, on its own broker user, completes its own task untouched.
    let mut workers = Vec::new();
    for (url, ns) in [(&url_a, "trust_a"), (&url_b, "trust_b")] {
        let mut config = env.config.clone();
        config.amqp_url = url.clone();
        let host = std::sync::Arc::new(RustHost::new(tasker_worker_rust::registry(), 8));
        let worker = Worker::new(
            WorkerOptions::from_config(&config, vec![ns.to_owned()]),
            host,
        );
        worker.check_access().await?;
        workers.push(RunningWorker::start(worker));
    }
    for task in [task_a, task_b] {
        let done = o.wait(task).await?;
        assert_eq!(done.state, "complete");
        assert_eq!(done.result, Some(json!({"second": {"value": 16}})));
    }
    for w in workers {
        w.stop().await;
    }
    team_a.close().await;
    team_b.close().await;
    o.stop().await;
    env.cleanup().await
}

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

/// A request (method, path, headers, body) and the status and code it must get.
type Case<'a> = (
    Method,
    &'a str,
    Vec<(&'a str, &'a str)>,
    &'a str,
    StatusCode,
    &'a str,
);

/// A request as a browser on another site would send it, or naming another `Host`.
async fn raw(
    o: &RunningOrchestrator,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", o.url()));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body.to_owned()).send().await.expect("reachable");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(json!(null)))
}

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

/// 1 MiB of nesting (brackets, maps, and maps behind a stray quote) and of aliases: what took
/// libyaml minutes.
fn expensive_templates() -> Vec<(&'static str, String)> {
    const MIB: usize = 1024 * 1024;
    let mut aliases = String::from("namespace: x\nname: y\nversion: '1'\na: &a [1]\nsteps:\n");
    while aliases.len() < MIB - 16 {
        aliases.push_str("  - *a\n");
    }
    // One stray quote in a plain scalar hid the rest of the text from the old pre-scan.
    let stray = format!(
        "namespace: x\nname: y\nversion: '1'\ndescription: a \"\nsteps: {}",
        "{a: ".repeat((MIB - 64) / 4)
    );
    vec![
        ("brackets", format!("steps: {}", "[".repeat(MIB - 8))),
        ("maps", format!("steps: {}", "{a: ".repeat((MIB - 8) / 4))),
        ("aliases", aliases),
        ("stray_quote", stray),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_would_cost_minutes_to_parse_is_refused_at_once() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.max_body_bytes = 2 * 1024 * 1024;
    let o = env.orchestrator().await?;
    let dir = std::env::temp_dir().join(format!("tasker-trust-{}", Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    for (what, text) in expensive_templates() {
        let started = Instant::now();
        let (status, answer) = raw(
            &o,
            Method::POST,
            "/v1/templates",
            &[("content-type", "application/yaml")],
            &text,
        )
        .await;
        let api = started.elapsed();
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_template")),
            "{what}: {answer}"
        );
        // The same file through the CLI, offline.
        let file = dir.join(format!("{what}.yaml"));
        std::fs::write(&file, &text)?;
        let started = Instant::now();
        let validated = std::process::Command::new(workspace_binary("tasker")?)
            .args(["templates", "validate"])
            .arg(&file)
            .output()?;
        let cli = started.elapsed();
        assert!(!validated.status.success(), "{what}: the CLI accepted it");
        let said = String::from_utf8_lossy(&validated.stderr).into_owned()
            + &String::from_utf8_lossy(&validated.stdout);
        assert!(said.contains(&format!("{what}.yaml:")), "{what}: {said}");
        println!("{what}: refused in {api:?} through the API, {cli:?} through the CLI");
        // A bound far above the figure, so the test says "not minutes" without timing the
        // machine: the figure itself is printed above.
        assert!(
            api < Duration::from_secs(5) && cli < Duration::from_secs(5),
            "{what}"
        );
    }
    std::fs::remove_dir_all(&dir)?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_say_nothing_are_closed_within_the_header_timeout() -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.header_timeout_ms = 1_000;
    let o = env.orchestrator().await?;
    let started = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(tokio::net::TcpStream::connect(o.addr).await?);
    }
    // A request on its own connection is answered meanwhile.
    assert_eq!(
        reqwest::get(format!("{}/health", o.url())).await?.status(),
        StatusCode::OK
    );
    let closes = silent.into_iter().map(|mut s| async move {
        let mut buf = [0u8; 64];
        // The server closes it: end of stream (or a reset), never data.
        matches!(s.read(&mut buf).await, Ok(0) | Err(_))
    });
    let closed = tokio::time::timeout(
        Duration::from_secs(20),
        futures_util::future::join_all(closes),
    )
    .await
    .expect("every silent connection closed within 20 s");
    assert!(closed.iter().all(|c| *c), "a silent connection got data");
    println!(
        "300 silent connections closed {:?} after opening (header timeout 1 s)",
        started.elapsed()
    );
    o.stop().await;
    env.cleanup().await
}

/// Transactions PostgreSQL committed in the test's database so far.
async fn transactions(o: &RunningOrchestrator) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database
         WHERE datname = current_database()",
    )
    .fetch_one(o.shared.store.pool())
    .await?)
}

/// Transactions per second over `window`.
async fn rate(o: &RunningOrchestrator, window: Duration) -> anyhow::Result<f64> {
    // Statistics reach pg_stat_database about once a second.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let before = transactions(o).await?;
    tokio::time::sleep(window).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let after = transactions(o).await?;
    Ok((after - before) as f64 / window.as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_event_streams_on_one_task_cost_the_database_what_one_does() -> anyhow::Result<()>
{
    let mut env = TestEnv::new().await?;
    // Every stream comes from this one address.
    env.config.orchestrator.max_connections_per_peer = 2_048;
    let o = env.orchestrator().await?;
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 1})))
        .await?;
    let window = Duration::from_secs(5);
    let idle = rate(&o, window).await?;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/tasks/{}/events", o.url(), task.id);
    let mut streams = Vec::new();
    for _ in 0..1_000 {
        let resp = client.get(&url).send().await?;
        assert_eq!(resp.status(), StatusCode::OK);
        streams.push(resp);
    }
    // Every stream got its first snapshot.
    for s in &mut streams {
        let first = tokio::time::timeout(Duration::from_secs(20), s.chunk())
            .await??
            .expect("a snapshot");
        assert!(String::from_utf8_lossy(&first).contains("event: snapshot"));
    }
    assert_eq!(o.shared.live.open(), 1_000);
    let watched = rate(&o, window).await?;
    println!("transactions/s: idle {idle:.1}, with 1,000 event streams {watched:.1}");
    assert!(
        watched <= 2.0 * idle.max(1.0),
        "1,000 streams: {watched:.1} transactions/s against {idle:.1} idle"
    );
    drop(streams);
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_copy_in_the_same_batch_never_displaces_the_real_result() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register_pairs(&o).await?;
    let other = o
        .client
        .create_task(&CreateTask::new("trust_a", "pair").context(json!({"value": 1})))
        .await?
        .id;
    let task = o
        .client
        .create_task(&CreateTask::new("trust_b", "pair").context(json!({"value": 1})))
        .await?
        .id;
    let step = first_step(&o, task).await?.id;
    let result = |task| -> anyhow::Result<Value> {
        Ok(serde_json::from_slice::<Vec<Value>>(&forged(task, step, 1))?.remove(0))
    };
    // Forged first (another task's id; a sender of another namespace), the real one last: the
    // engine sees them as three copies of one step's attempt.
    let batch = json!([result(other)?, result(task)?, result(task)?]);
    let permits = [None, Some("^(?:trust_a)$"), None];
    let answer: Value = sqlx::query_scalar("SELECT tasker_apply_results($1, $2)")
        .bind(&batch)
        .bind(&permits[..])
        .fetch_one(o.shared.store.pool())
        .await?;
    assert_eq!(answer["accepted"], 1, "{answer}");
    let codes = tasker::rejected_codes(&answer);
    assert_eq!(
        codes,
        vec![(1, "result_mismatch"), (2, "result_not_permitted")]
    );
    let after = first_step(&o, task).await?;
    assert_eq!(after.state, "completed");
    o.stop().await;
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
