//! What a worker's broker login can do to result processing: no message body stalls the
//! results consumer, and a dead letter replayed is judged as its sender was, never with the
//! orchestrator's trust, and goes back only to the queue it really came from.

use std::time::{Duration, Instant};

use lapin::BasicProperties;
use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable};
use reqwest::{Method, StatusCode};
use serde_json::json;
use tasker::{RunningOrchestrator, TestEnv};
use tasker_broker::{Broker, topology};
use tasker_orchestration::store::Scope;
use tasker_shared::{Outcome, StepResult};
use uuid::Uuid;

use crate::common::{call, pair, register, token, with_tokens};

/// A success for attempt `attempt` of `step` of `task`.
fn result(task: Uuid, step: Uuid, attempt: u32) -> StepResult {
    StepResult {
        task_id: task,
        step_id: step,
        attempt,
        outcome: Outcome::Success {
            result: json!({"value": 1_000_000}),
        },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "someone".into(),
        traceparent: None,
        streamed: None,
    }
}

/// Publishes `body` as `broker`'s user to the results queue, as a worker does.
async fn publish(
    broker: &Broker,
    prefix: &str,
    body: &[u8],
    properties: BasicProperties,
) -> anyhow::Result<()> {
    let queue = topology::results_queue(prefix);
    crate::common::publish_as_worker(broker, prefix, &queue, body, properties).await
}

/// The first step of task `task` (state, attempt).
async fn first(o: &RunningOrchestrator, task: Uuid) -> anyhow::Result<(Uuid, String, i32)> {
    let s = crate::common::first_step(o, task).await?;
    Ok((s.id, s.state, s.attempt as i32))
}

async fn create(o: &RunningOrchestrator, ns: &str) -> anyhow::Result<Uuid> {
    let req = tasker_client::CreateTask::new(ns, "pair").context(json!({"value": 3}));
    Ok(o.client.create_task(&req).await?.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_body_stalls_the_results_consumer() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(&pair("sec_s"), Some("pair.yaml"), None)
        .await?;
    let prefix = env.config.queue_prefix.clone();
    let (user, url) = env.worker_user("s", &["sec_s"])?;
    token(&o, &user, Scope::Write, Some("sec_s")).await?;
    let team = Broker::connect(&url, &prefix, "sec-s").await?;
    let task = create(&o, "sec_s").await?;
    let (step, _, _) = first(&o, task).await?;
    let own = BasicProperties::default().with_user_id(user.as_str().into());
    // Over the consumer's prefetch (64) of messages that carry no result, then each other
    // kind of body a worker's login can send.
    let junk: Vec<Vec<u8>> = std::iter::repeat_n(b"[]".to_vec(), 100)
        .chain(
            [
                &b""[..],
                b"{}",
                b"\"a string\"",
                b"[1, 2]",
                b"null",
                b"\xff\xfe",
                b"[{\"task_id\": 1}]",
            ]
            .map(<[u8]>::to_vec),
        )
        .collect();
    for body in &junk {
        publish(&team, &prefix, body, own.clone()).await?;
    }
    let real = serde_json::to_vec(&[result(task, step, 1)])?;
    let sent = Instant::now();
    publish(&team, &prefix, &real, own).await?;
    // Before the fix it never was (the consumer stalled on the empty batches); the bound is wide
    // for a loaded machine and the figure is printed.
    o.until(
        Duration::from_secs(10),
        "the real result applied",
        || async {
            let (_, state, _) = first(&o, task).await?;
            Ok((state == "completed").then_some(()))
        },
    )
    .await?;
    let applied = sent.elapsed();
    println!("a real result behind 107 junk bodies applied after {applied:?}");
    // Each kind was dead-lettered, the 100 empty batches as one letter seen 100 times.
    let seen: Option<i32> = o
        .until(
            Duration::from_secs(10),
            "the empty batches kept",
            || async {
                let seen: Option<i32> = sqlx::query_scalar(
                "SELECT times_seen FROM dead_letters WHERE body = '[]'::bytea AND times_seen = 100",
            )
            .fetch_optional(o.shared.store.pool())
            .await?;
                Ok(seen.map(Some))
            },
        )
        .await?;
    assert_eq!(seen, Some(100));
    let reason: String =
        sqlx::query_scalar("SELECT reason FROM dead_letters WHERE body = '[]'::bytea")
            .fetch_one(o.shared.store.pool())
            .await?;
    assert!(reason.contains("carries no results"), "{reason}");
    team.close().await;
    o.stop().await;
    env.cleanup().await
}

/// Messages in queue `queue` (a passive declare's count).
async fn depth(broker: &Broker, queue: &str) -> anyhow::Result<u32> {
    let channel = broker.channel().await?;
    let q = channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    Ok(q.message_count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_dead_letter_is_never_trusted_more_than_its_sender() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for ns in ["sec_a", "sec_b"] {
        assert_eq!(register(&o, &root, &pair(ns)).await.0, StatusCode::CREATED);
    }
    let prefix = env.config.queue_prefix.clone();
    let (user, url) = env.worker_user("a", &["sec_a"])?;
    token(&o, &user, Scope::Write, Some("sec_a")).await?;
    let a_admin = token(&o, "a-admin", Scope::Admin, Some("sec_a")).await?;
    let team = Broker::connect(&url, &prefix, "sec-a").await?;
    let guest = Broker::connect(&env.config.amqp_url, &prefix, "sec-guest").await?;
    let root_client = crate::common::client(&o, &root);
    let (task_a, task_b) = (create(&o, "sec_a").await?, create(&o, "sec_b").await?);
    let (step_a, _, _) = first(&o, task_a).await?;
    let (step_b, _, _) = first(&o, task_b).await?;
    let mut kept = o.dead_letters_kept();

    // 1. A result that names no sender (published without `user_id`) is dead-lettered with
    // none, and replaying it is refused: it could move nothing.
    let forged = serde_json::to_vec(&[result(task_b, step_b, 1)])?;
    publish(&guest, &prefix, &forged, BasicProperties::default()).await?;
    let id = kept.take(1, Duration::from_secs(20)).await?[0];
    let letter = root_client.dead_letter(id).await?;
    assert_eq!(letter.info.sender, None, "{letter:?}");
    let (status, code, _) = replay(&o, &root, id).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "not_replayable")
    );

    // 2. A's own result bundled before a forged one of b's: the letter names both namespaces,
    // so a's scoped admin can neither read nor replay it; replayed by root, it is judged as
    // its sender and moves nothing.
    let own = BasicProperties::default().with_user_id(user.as_str().into());
    let bundle = serde_json::to_vec(&[result(task_a, step_a, 2), result(task_b, step_b, 1)])?;
    publish(&team, &prefix, &bundle, own.clone()).await?;
    let id = kept.take(1, Duration::from_secs(20)).await?[0];
    let letter = root_client.dead_letter(id).await?;
    assert_eq!(letter.info.sender.as_deref(), Some(user.as_str()));
    let mut namespaces = letter.info.namespaces.clone().unwrap_or_default();
    namespaces.sort();
    assert_eq!(namespaces, ["sec_a", "sec_b"]);
    assert!(
        letter.info.reason.contains("may not serve namespace sec_b"),
        "{}",
        letter.info.reason
    );
    for (method, path) in [
        (Method::GET, format!("/v1/dead-letters/{id}")),
        (Method::POST, format!("/v1/dead-letters/{id}/replay")),
        (Method::DELETE, format!("/v1/dead-letters/{id}")),
    ] {
        let (status, code, _) = call(&o, method, &path, &a_admin, None).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{path}"
        );
    }
    let (_, _, listed) = call(&o, Method::GET, "/v1/dead-letters", &a_admin, None).await;
    assert_eq!(listed["dead_letters"], json!([]), "{listed}");
    let (status, _, body) = replay(&o, &root, id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    kept.take(1, Duration::from_secs(20)).await?;
    assert_eq!(first(&o, task_b).await?.1, "enqueued");

    // 3. A result that expires in the results queue with a forged origin (b's steps queue)
    // and a forged trusted sender: kept as from the results queue and from a's user, and a
    // replay goes there only.
    o.stop().await;
    let mut forged_headers = FieldTable::default();
    let steps_b = topology::steps_queue(&prefix, "sec_b");
    for (k, v) in [
        ("x-tasker-origin", steps_b.as_str()),
        ("x-tasker-reason", "harmless"),
        (
            "x-tasker-sender",
            tasker_broker::user_of(&env.config.amqp_url).as_str(),
        ),
    ] {
        forged_headers.insert(k.into(), AMQPValue::LongString(v.into()));
    }
    let expiring = own.with_expiration("1".into()).with_headers(forged_headers);
    publish(&team, &prefix, &forged, expiring).await?;
    let o = env.orchestrator().await?;
    let mut kept = o.dead_letters_kept();
    let id = kept.take(1, Duration::from_secs(20)).await?[0];
    let root_client = crate::common::client(&o, &root);
    let letter = root_client.dead_letter(id).await?;
    assert_eq!(
        letter.info.queue.as_deref(),
        Some(topology::results_queue(&prefix).as_str())
    );
    assert_eq!(letter.info.sender.as_deref(), Some(user.as_str()));
    let before = depth(&guest, &steps_b).await?;
    let (status, _, body) = replay(&o, &root, id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["queue"], topology::results_queue(&prefix));
    kept.take(1, Duration::from_secs(20)).await?;
    assert_eq!(
        depth(&guest, &steps_b).await?,
        before,
        "a message reached b's steps"
    );
    assert_eq!(first(&o, task_b).await?.1, "enqueued");

    // The healthy tasks complete.
    let worker = env.rust_worker_for(&["sec_a", "sec_b"]);
    for task in [task_a, task_b] {
        assert_eq!(o.wait(task).await?.state, "complete");
    }
    worker.stop().await;
    team.close().await;
    guest.close().await;
    o.stop().await;
    env.cleanup().await
}

async fn replay(
    o: &RunningOrchestrator,
    token: &str,
    id: i64,
) -> (StatusCode, String, serde_json::Value) {
    let path = format!("/v1/dead-letters/{id}/replay");
    call(o, Method::POST, &path, token, None).await
}
