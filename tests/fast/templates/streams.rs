//! Step streams (docs/streams.md): a Rust handler's `ctx.emit_text` chunks reach a live reader
//! in order and are kept, so a reader that comes back from an offset (`from`, `Last-Event-ID`)
//! or attaches after the task ended reads them with no gap and no duplicate; an attempt past
//! `worker.max_stream_bytes` fails with `stream_too_large` — against a real orchestrator, Rust
//! worker, PostgreSQL and RabbitMQ.

use std::time::Duration;

use serde_json::{Value, json};
use tasker_client::{CreateTask, StreamChunk, StreamQuery};
use uuid::Uuid;

use super::bare_env;

/// One step that streams (`stream_emitter`: `count` text chunks `t0`, `t1` … on `tokens`).
pub(super) const STREAMING: &str = "namespace: rust_examples
name: streaming
version: '1'
steps:
  - name: generate
    handler: stream_emitter
    retry: {max_attempts: 2, backoff: none}
";

async fn start(o: &tasker::RunningOrchestrator, context: Value) -> anyhow::Result<Uuid> {
    let task = CreateTask::new("rust_examples", "streaming").context(context);
    Ok(o.client.create_task(&task).await?.id)
}

/// Every chunk a live reader gets from `from` until the stream is complete.
async fn follow(
    o: &tasker::RunningOrchestrator,
    id: Uuid,
    from: i64,
) -> anyhow::Result<Vec<StreamChunk>> {
    follow_query(o, id, &query(Some(from), None, None)).await
}

/// Every chunk a live reader of `q` gets until the stream is complete.
pub(super) async fn follow_query(
    o: &tasker::RunningOrchestrator,
    id: Uuid,
    q: &StreamQuery,
) -> anyhow::Result<Vec<StreamChunk>> {
    let mut stream = o.client.stream(id, q);
    let mut chunks = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(c) = stream.next().await? {
            chunks.push(c);
        }
        anyhow::Ok(())
    })
    .await??;
    Ok(chunks)
}

/// `n` text chunks `t0` … then the attempt's end, at offsets `from` on, in order.
fn assert_whole(chunks: &[StreamChunk], from: i64, n: i64) {
    let offsets: Vec<i64> = chunks.iter().map(|c| c.offset).collect();
    assert_eq!(
        offsets,
        (from..=n).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    for c in &chunks[..chunks.len() - 1] {
        assert_eq!(c.text.as_deref(), Some(format!("t{}", c.offset).as_str()));
        assert_eq!(
            (c.seq as i64, c.attempt, c.step.as_str()),
            (c.offset, 1, "generate")
        );
        assert!(!c.end && !c.retry && c.topic == "tokens");
    }
    let end = chunks.last().expect("an end");
    assert!(
        end.end && end.text.is_none() && end.data.is_none(),
        "{end:?}"
    );
}

pub(super) fn query(from: Option<i64>, topic: Option<&str>, limit: Option<i64>) -> StreamQuery {
    StreamQuery {
        from,
        topic: topic.map(Into::into),
        limit,
        children: false,
    }
}

/// The same chunks (the first difference said, not all of them).
fn assert_same(got: &[StreamChunk], want: &[StreamChunk]) {
    assert_eq!(got.len(), want.len(), "chunks");
    if let Some((g, w)) = got.iter().zip(want).find(|(g, w)| g != w) {
        panic!("chunk {} differs: {g:?} != {w:?}", w.offset);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reaches_a_live_reader_and_is_kept_for_later_ones() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(STREAMING, Some("streaming.yaml"), None)
        .await?;
    let worker = env.rust_worker();
    let id = start(&o, json!({"count": 1000})).await?;
    // Attached while the step runs (or just after): every chunk once, in order, then the end.
    let live = follow(&o, id, 0).await?;
    assert_whole(&live, 0, 1000);
    let task = o.wait(id).await?;
    assert_eq!(task.state.to_string(), "complete");
    // After the task ended: the whole stream again, from the database.
    assert_same(&follow(&o, id, 0).await?, &live);
    // A reader that stopped at chunk 400 goes on from there: 400 … 999 and the end.
    assert_whole(&follow(&o, id, 400).await?, 400, 1000);
    // The same as events with `Last-Event-ID` (the last offset received).
    let text = reqwest::Client::new()
        .get(format!("{}/v1/tasks/{id}/stream", o.url()))
        .header("accept", "text/event-stream")
        .header("last-event-id", "998")
        .send()
        .await?
        .text()
        .await?;
    assert!(text.starts_with("id: 999\nevent: chunk\n"), "{text}");
    assert_eq!(text.matches("event: chunk").count(), 2, "{text}");
    assert!(text.contains("event: end\ndata: {\"next\":1001}"), "{text}");
    // Pages of JSON: the same chunks, `next` and `complete`.
    let page = o
        .client
        .read_stream(id, &query(Some(990), None, Some(5)))
        .await?;
    assert_eq!(
        (page.chunks.len(), page.next, page.complete),
        (5, 995, false)
    );
    assert_same(&page.chunks, &live[990..995]);
    let rest = o
        .client
        .read_stream(id, &query(Some(995), None, None))
        .await?;
    assert_eq!(
        (rest.chunks.len(), rest.next, rest.complete),
        (6, 1001, true)
    );
    // A topic nothing was sent on: no chunk, and the offsets still move on.
    let none = o
        .client
        .read_stream(id, &query(None, Some("progress"), None))
        .await?;
    assert_eq!(
        (none.chunks.len(), none.next, none.complete),
        (0, 1001, true)
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_max_stream_bytes_fails_with_stream_too_large() -> anyhow::Result<()> {
    let mut env = bare_env().await?;
    env.config.worker.max_stream_bytes = 2_048;
    let o = env.orchestrator().await?;
    o.client
        .register_template(STREAMING, Some("streaming.yaml"), None)
        .await?;
    let worker = env.rust_worker();
    // 100 chunks of about 100 bytes, the handler passing over the refusals: the step fails all
    // the same, and what was kept stays within the bound.
    let id = start(&o, json!({"count": 100, "pad": 100, "ignore_errors": true})).await?;
    let task = o.wait(id).await?;
    assert_eq!(task.state.to_string(), "error");
    let step = &o.client.steps(id).await?[0];
    let error = step.error.clone().unwrap_or(Value::Null);
    assert_eq!(error["kind"], "stream_too_large", "{error}");
    let chunks = follow(&o, id, 0).await?;
    let bytes: usize = chunks
        .iter()
        .filter_map(|c| c.text.as_ref())
        .map(String::len)
        .sum();
    assert!(
        !chunks.is_empty() && bytes <= 2_048,
        "{} chunks, {bytes} bytes",
        chunks.len()
    );
    assert!(chunks.last().is_some_and(|c| c.end));
    // Bad requests change nothing and say why.
    for query in ["from=-1", "limit=0", "limit=1001", "topic=", "colour=red"] {
        let resp = reqwest::get(format!("{}/v1/tasks/{id}/stream?{query}", o.url())).await?;
        assert_eq!(resp.status(), 400, "{query}");
        let body: Value = resp.json().await?;
        assert_eq!(body["error"]["code"], "invalid_query", "{query}: {body}");
    }
    let missing = reqwest::get(format!("{}/v1/tasks/{}/stream", o.url(), Uuid::now_v7())).await?;
    assert_eq!(missing.status(), 404);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_streams_as_its_own_attempt_marked_and_nothing_of_the_first_is_lost()
-> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(STREAMING, Some("streaming.yaml"), None)
        .await?;
    let worker = env.rust_worker();
    let id = start(&o, json!({"count": 3, "fail_first": true})).await?;
    let chunks = follow(&o, id, 0).await?;
    let seen: Vec<(i32, i32, Option<&str>, bool, bool)> = chunks
        .iter()
        .map(|c| (c.attempt, c.seq, c.text.as_deref(), c.end, c.retry))
        .collect();
    assert_eq!(
        seen,
        [
            (1, 0, Some("t0"), false, false),
            (1, 1, Some("t1"), false, false),
            (1, 2, Some("t2"), false, false),
            (1, 3, None, true, false),
            (2, 0, Some("t0"), false, true),
            (2, 1, Some("t1"), false, false),
            (2, 2, Some("t2"), false, false),
            (2, 3, None, true, false),
        ]
    );
    assert_eq!(o.wait(id).await?.state.to_string(), "complete");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
