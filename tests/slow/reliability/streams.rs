//! A worker SIGKILLed in the middle of a step's stream: the step runs again on another worker,
//! its stream starts over with a chunk marked `retry`, and nothing the first run streamed is
//! lost — a reader following the stream all along sees the first run's chunks, then the whole
//! second run, each once, at dense offsets.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker_client::{CreateTask, StreamQuery};

use crate::common::start_worker;

const STREAMING: &str = "namespace: rust_examples
name: kill_streaming
version: '1'
steps:
  - name: generate
    handler: stream_emitter
    timeout_seconds: 120
";

/// Chunks the step emits, 10 ms apart.
const CHUNKS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_stream_streams_again_marked_and_loses_nothing() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    o.client.register_template(STREAMING, None, None).await?;
    let mut first = start_worker(&env, "rust", "rust-stream-1", &o.url()).await?;
    let task = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "kill_streaming")
                .context(json!({"count": CHUNKS, "pace_ms": 10})),
        )
        .await?;
    let mut stream = o.client.stream(task.id, &StreamQuery::default());
    let mut chunks = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while chunks.len() < 50 {
            let c = stream.next().await?;
            chunks.push(c.ok_or_else(|| anyhow::anyhow!("the stream ended early"))?);
        }
        anyhow::Ok(())
    })
    .await??;
    first.child.kill().await?;
    let mut second = start_worker(&env, "rust", "rust-stream-2", &o.url()).await?;
    tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(c) = stream.next().await? {
            chunks.push(c);
        }
        anyhow::Ok(())
    })
    .await??;

    let offsets: Vec<i64> = chunks.iter().map(|c| c.offset).collect();
    assert_eq!(
        offsets,
        (0..chunks.len() as i64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    let restarts: Vec<usize> = (0..chunks.len()).filter(|&i| chunks[i].retry).collect();
    assert_eq!(restarts.len(), 1, "one start over: {restarts:?}");
    let k = restarts[0];
    assert!(
        k >= 50,
        "the first run's 50 chunks come first: restarted at {k}"
    );
    let texts = |from: usize, to: usize| -> Vec<Option<String>> {
        chunks[from..to].iter().map(|c| c.text.clone()).collect()
    };
    let expected =
        |n: usize| -> Vec<Option<String>> { (0..n).map(|i| Some(format!("t{i}"))).collect() };
    // The first run, as far as it went: kept, in order, no end.
    assert_eq!(texts(0, k), expected(k), "the first run's chunks");
    // The second run, whole, then its end.
    assert_eq!(
        chunks.len(),
        k + CHUNKS + 1,
        "the second run whole and its end"
    );
    assert_eq!(
        texts(k, k + CHUNKS),
        expected(CHUNKS),
        "the second run's chunks"
    );
    assert!(chunks.last().is_some_and(|c| c.end));
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(
        done.result.as_ref().map(|r| &r["generate"]["emitted"]),
        Some(&json!(CHUNKS))
    );
    second.child.kill().await?;
    o.stop().await;
    env.cleanup().await
}
