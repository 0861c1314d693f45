//! Step streams (docs/streams.md) against an attacker: a token of one namespace reads no other
//! namespace's stream, as JSON or as events; a worker's broker login cannot put chunks into a
//! step of a namespace it may not serve (nor of a task the step is not of, nor of an attempt
//! never dispatched), its message is dead-lettered with the reason while its own chunks are
//! kept; and no message body stalls the streams consumer.

use std::time::Duration;

use lapin::BasicProperties;
use reqwest::{Method, StatusCode};
use serde_json::json;
use tasker::RunningOrchestrator;
use tasker_broker::{Broker, topology};
use tasker_orchestration::store::Scope;
use tasker_shared::stream::Chunk;
use uuid::Uuid;

use crate::common::{call, pair, register, token, with_tokens};

/// A text chunk of attempt `attempt` of `step` of `task`.
pub(super) fn chunk(task: Uuid, step: Uuid, attempt: u32, seq: u32, text: &str) -> Chunk {
    Chunk {
        task_id: task,
        step_id: step,
        attempt,
        seq,
        topic: "tokens".into(),
        text: Some(text.into()),
        data: None,
        end: false,
        at: chrono::Utc::now(),
        run: None,
    }
}

/// Publishes `body` as `user` to the streams queue, as a worker does.
pub(super) async fn publish(
    broker: &Broker,
    prefix: &str,
    body: &[u8],
    user: &str,
) -> anyhow::Result<()> {
    let queue = topology::streams_queue(prefix);
    let properties = BasicProperties::default().with_user_id(user.into());
    crate::common::publish_as_worker(broker, prefix, &queue, body, properties).await
}

/// The first step of `task`, and its current attempt.
async fn first(o: &RunningOrchestrator, task: Uuid) -> anyhow::Result<(Uuid, u32)> {
    let s = crate::common::first_step(o, task).await?;
    Ok((s.id, s.attempt as u32))
}

/// The texts kept of `task`'s stream.
async fn kept(o: &RunningOrchestrator, task: Uuid) -> anyhow::Result<Vec<String>> {
    Ok(
        sqlx::query_scalar("SELECT text FROM stream_chunks WHERE task_id = $1 ORDER BY position")
            .bind(task)
            .fetch_all(o.shared.store.pool())
            .await?,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_read_and_written_only_within_its_namespace() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let mut tasks = Vec::new();
    for ns in ["sec_a", "sec_b"] {
        assert_eq!(register(&o, &root, &pair(ns)).await.0, StatusCode::CREATED);
        let req = json!({"namespace": ns, "name": "pair", "context": {"value": 1}});
        let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &root, Some(req)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        tasks.push(body["id"].as_str().unwrap_or_default().parse::<Uuid>()?);
    }
    let (task_a, task_b) = (tasks[0], tasks[1]);
    let ((step_a, attempt_a), (step_b, _)) = (first(&o, task_a).await?, first(&o, task_b).await?);
    let prefix = env.config.queue_prefix.clone();
    let (user, url) = env.worker_user("a", &["sec_a"])?;
    token(&o, &user, Scope::Write, Some("sec_a")).await?;
    let team = Broker::connect(&url, &prefix, "sec-stream-a").await?;

    // Junk first, over the consumer's prefetch: each kind is dead-lettered, none stalls it.
    let junk: Vec<&[u8]> = std::iter::repeat_n(&b"[]"[..], 70)
        .chain([&b""[..], b"{}", b"null", b"\xff", b"[{\"task_id\": 1}]"])
        .collect();
    for body in &junk {
        publish(&team, &prefix, body, &user).await?;
    }
    // Its own chunk, then one into b's step, one claiming a's step for b's task, one of an
    // attempt never dispatched, bundled: its own is kept, the message is dead-lettered.
    let bundle = serde_json::to_vec(&[
        chunk(task_a, step_a, attempt_a, 0, "mine"),
        chunk(task_b, step_b, 1, 0, "into b"),
        chunk(task_b, step_a, attempt_a, 1, "a's step as b's"),
        chunk(task_a, step_a, attempt_a + 5, 0, "a future attempt"),
    ])?;
    publish(&team, &prefix, &bundle, &user).await?;
    let pool = o.shared.store.pool().clone();
    let bundled: String = o
        .until(
            Duration::from_secs(30),
            "the bundle dead-lettered",
            || async {
                Ok(sqlx::query_scalar(
                    "SELECT reason FROM dead_letters WHERE reason LIKE '%stream chunk refused%'",
                )
                .fetch_optional(&pool)
                .await?)
            },
        )
        .await?;
    for why in [
        "of a namespace its sender may not serve",
        &format!("is not a step of task {task_b}"),
        &format!(
            "attempt {} of step {step_a} was never dispatched",
            attempt_a + 5
        ),
        &format!("(sent by broker user {user})"),
    ] {
        assert!(bundled.contains(why), "{why}: {bundled}");
    }
    // Every junk body was dead-lettered, the empty batches as one letter seen 70 times.
    let empty: (i32, String) = o
        .until(
            Duration::from_secs(30),
            "the empty batches kept",
            || async {
                Ok(sqlx::query_as(
                    "SELECT times_seen, reason FROM dead_letters
                  WHERE body = '[]'::bytea AND times_seen = 70",
                )
                .fetch_optional(&pool)
                .await?)
            },
        )
        .await?;
    assert!(empty.1.contains("carries no chunks"), "{}", empty.1);
    let malformed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM dead_letters WHERE reason LIKE 'malformed stream message%'",
    )
    .fetch_one(&pool)
    .await?;
    assert_eq!(malformed, 6, "the empty batches and five kinds of junk");
    assert_eq!(kept(&o, task_a).await?, ["mine"]);
    assert!(kept(&o, task_b).await?.is_empty(), "b's stream was written");

    // A's reader reads a's stream and nothing of b's, as JSON and as events.
    let reader = token(&o, "a-reader", Scope::Read, Some("sec_a")).await?;
    let (status, _, page) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{task_a}/stream"),
        &reader,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["chunks"][0]["text"], "mine", "{page}");
    let (status, code, _) = call(
        &o,
        Method::GET,
        &format!("/v1/tasks/{task_b}/stream"),
        &reader,
        None,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let events = reqwest::Client::new()
        .get(format!("{}/v1/tasks/{task_b}/stream", o.url()))
        .bearer_auth(&reader)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    assert_eq!(events.status(), StatusCode::FORBIDDEN);

    // The healthy tasks complete.
    let worker = env.rust_worker_for(&["sec_a", "sec_b"]);
    for task in [task_a, task_b] {
        assert_eq!(o.wait(task).await?.state, "complete");
    }
    worker.stop().await;
    team.close().await;
    o.stop().await;
    env.cleanup().await
}
