//! Dead letters: a message no one can process is kept with its origin, reason and first-seen
//! time while everything else goes on; it can be listed, inspected, replayed to its queue or
//! discarded through the API, the Rust client and the `tasker` CLI.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tasker::{RunningOrchestrator, TestEnv, steps_by_name, workspace_binary};
use tasker_broker::dead::{ORIGIN_HEADER, REASON_HEADER};
use tasker_broker::{AMQPValue, Broker, FieldTable, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_orchestration::events::Event;
use tasker_shared::{Outcome, StepResult};

const WAIT: Duration = Duration::from_secs(20);

#[path = "dead_letters/operations.rs"]
mod operations;

async fn api_error(
    o: &RunningOrchestrator,
    method: reqwest::Method,
    path: &str,
) -> (StatusCode, String) {
    let resp = reqwest::Client::new()
        .request(method, format!("{}{path}", o.url()))
        .send()
        .await
        .expect("orchestrator reachable");
    let status = resp.status();
    let body: serde_json::Value = resp.json().await.unwrap_or_default();
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_step_message_is_kept_with_the_workers_reason_and_work_goes_on()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let cfg = &env.config;
    let mut kept = o.dead_letters_kept();
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    let publisher = broker.publisher().await?;
    let queue = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
    let garbage = Outgoing {
        queue: queue.clone(),
        payload: br#"[{"step_id": "not a step"}]"#.to_vec(),
    };
    publisher
        .publish_all(std::slice::from_ref(&garbage))
        .await?;

    let task = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    let id = kept.take(1, WAIT).await?[0];
    let dead = o.client.dead_letter(id).await?;
    assert_eq!(dead.info.queue.as_deref(), Some(queue.as_str()));
    assert!(
        dead.info.reason.starts_with("malformed step message: "),
        "{}",
        dead.info.reason
    );
    assert_eq!(dead.body, Some(json!([{"step_id": "not a step"}])));
    assert_eq!(dead.info.times_seen, 1);
    assert_eq!(dead.headers[REASON_HEADER], json!(dead.info.reason));

    // The same message dead again is the same entry, seen twice, first seen when it was.
    publisher.publish_all(&[garbage]).await?;
    assert_eq!(kept.take(1, WAIT).await?, vec![id]);
    let again = o.client.dead_letter(id).await?;
    assert_eq!(again.info.times_seen, 2);
    assert_eq!(again.info.first_seen, dead.info.first_seen);
    assert!(again.info.last_seen >= dead.info.first_seen);
    let page = o.client.dead_letters(None, None).await?;
    assert_eq!(page.dead_letters.len(), 1);
    assert_eq!(page.next_before, None);

    broker.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_dead_letter_goes_back_to_its_queue_and_is_applied() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    // No worker: the root step waits in its queue.
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?;
    let root = steps_by_name(&o.client, task.id).await?["double"].clone();
    assert_eq!(root.state, "enqueued");
    // Its result, parked in the dead letters as if it had once been refused: 20 instead of
    // the 12 the handler would return, so the task's result shows which one was applied.
    let parked = StepResult {
        task_id: task.id,
        step_id: root.id,
        attempt: 1,
        outcome: Outcome::Success {
            result: json!({"value": 20}),
        },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "replay-test".into(),
        traceparent: None,
        streamed: None,
    };
    let results = topology::results_queue(&cfg.queue_prefix);
    let mut headers = FieldTable::default();
    headers.insert(
        ORIGIN_HEADER.into(),
        AMQPValue::LongString(results.as_str().into()),
    );
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString("parked by hand".into()),
    );
    // Sent by the orchestrators' own broker user, as a dead letter of one of its results.
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    headers.insert(
        tasker_broker::dead::SENDER_HEADER.into(),
        AMQPValue::LongString(broker.user().into()),
    );
    let mut kept = o.dead_letters_kept();
    broker
        .publisher()
        .await?
        .publish_with_headers(
            &topology::dead_letter_queue(&cfg.queue_prefix),
            &serde_json::to_vec(&parked)?,
            headers,
        )
        .await?;
    let id = kept.take(1, WAIT).await?[0];
    let dead = o.client.dead_letter(id).await?;
    assert_eq!(dead.info.reason, "parked by hand");
    assert_eq!(dead.info.task_id, Some(task.id));
    assert_eq!(dead.info.step_id, Some(root.id));
    assert_eq!(
        steps_by_name(&o.client, task.id).await?["double"].state,
        "enqueued",
        "kept, not applied"
    );

    let mut events = o.events().subscribe();
    assert_eq!(o.client.replay_dead_letter(id).await?, results);
    tokio::time::timeout(WAIT, async {
        while !matches!(events.recv().await?, Event::ResultsApplied { accepted, .. } if accepted > 0)
        {}
        anyhow::Ok(())
    })
    .await??;
    let double = steps_by_name(&o.client, task.id).await?["double"].clone();
    assert_eq!(double.state, "completed");
    assert_eq!(double.result, Some(json!({"value": 20})));
    assert_eq!(double.worker.as_deref(), Some("replay-test"));
    assert!(
        o.client
            .dead_letters(None, None)
            .await?
            .dead_letters
            .is_empty()
    );
    // A second replay finds nothing.
    let (status, code) = api_error(
        &o,
        reqwest::Method::POST,
        &format!("/v1/dead-letters/{id}/replay"),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "dead_letter_not_found")
    );

    // The worker's own attempt of `double` is a duplicate now; the rest runs on the replayed
    // value: 20 -> 30 -> 900 -> 450.
    let worker = env.rust_worker();
    let done = o.wait(task.id).await?;
    assert_eq!(done.result, Some(json!({"halve": {"value": 450}})));
    broker.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_from_nowhere_can_only_be_discarded_and_bad_requests_change_nothing()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    let mut kept = o.dead_letters_kept();
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    // No headers, and a body that is not UTF-8.
    broker
        .publisher()
        .await?
        .publish_all(&[Outgoing {
            queue: topology::dead_letter_queue(&cfg.queue_prefix),
            payload: vec![0xff, 0x00, 0xfe],
        }])
        .await?;
    let id = kept.take(1, WAIT).await?[0];
    let dead = o.client.dead_letter(id).await?;
    assert_eq!(dead.info.queue, None);
    assert_eq!(dead.body_base64.as_deref(), Some("/wD+"));
    assert_eq!(dead.info.bytes, 3);

    use reqwest::Method;
    for (method, path, status, code) in [
        (
            Method::POST,
            format!("/v1/dead-letters/{id}/replay"),
            StatusCode::CONFLICT,
            "not_replayable",
        ),
        (
            Method::GET,
            "/v1/dead-letters/0".into(),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            Method::GET,
            "/v1/dead-letters/abc".into(),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            Method::GET,
            "/v1/dead-letters/999999".into(),
            StatusCode::NOT_FOUND,
            "dead_letter_not_found",
        ),
        (
            Method::POST,
            "/v1/dead-letters/999999/replay".into(),
            StatusCode::NOT_FOUND,
            "dead_letter_not_found",
        ),
        (
            Method::DELETE,
            "/v1/dead-letters/999999".into(),
            StatusCode::NOT_FOUND,
            "dead_letter_not_found",
        ),
        (
            Method::GET,
            "/v1/dead-letters?limit=0".into(),
            StatusCode::BAD_REQUEST,
            "invalid_limit",
        ),
        (
            Method::GET,
            "/v1/dead-letters?before=x".into(),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
    ] {
        let got = api_error(&o, method.clone(), &path).await;
        assert_eq!((got.0, got.1.as_str()), (status, code), "{method} {path}");
    }
    // Still there, unchanged.
    let after = o.client.dead_letter(id).await?;
    assert_eq!(after.info.times_seen, 1);
    assert_eq!(after.body_base64, dead.body_base64);

    // The CLI lists it, shows it, and discards it.
    let tasker = workspace_binary("tasker")?;
    let cli = |args: &[&str]| {
        std::process::Command::new(&tasker)
            .arg("--url")
            .arg(o.url())
            .args(args)
            .output()
    };
    let list = cli(&["dead-letters"])?;
    assert!(list.status.success(), "{list:?}");
    let text = String::from_utf8(list.stdout)?;
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with(&id.to_string()) && l.contains("no reason")),
        "{text}"
    );
    let show = cli(&["dead-letters", "show", &id.to_string(), "--json"])?;
    assert!(show.status.success(), "{show:?}");
    let shown: serde_json::Value = serde_json::from_slice(&show.stdout)?;
    assert_eq!(shown["id"], json!(id));
    assert_eq!(shown["body_base64"], json!("/wD+"));
    let discard = cli(&["dead-letters", "discard", &id.to_string()])?;
    assert!(discard.status.success(), "{discard:?}");
    let again = cli(&["dead-letters", "discard", &id.to_string()])?;
    assert_eq!(again.status.code(), Some(4), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains(&format!("no dead letter {id}")),
        "{again:?}"
    );
    assert!(
        o.client
            .dead_letters(None, None)
            .await?
            .dead_letters
            .is_empty()
    );

    broker.close().await;
    o.stop().await;
    env.cleanup().await
}
