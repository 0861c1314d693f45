//! A task's streams on its page (`tests/dashboard/streams.mjs`): nothing while no step has
//! streamed; a step's text chunks appear as it streams, after the page opened (the step starts
//! on a signal the page's script sends), each attempt in a box of its own (a retry marked), and
//! each box says when its stream ended — against a real orchestrator, Rust worker, PostgreSQL and
//! RabbitMQ.

use super::*;

const STREAMING: &str = "namespace: rust_examples
name: dash_streaming
version: '1'
steps:
  - name: go
    wait: {signal: go}
  - name: generate
    depends_on: [go]
    handler: stream_emitter
    retry: {max_attempts: 2, backoff: none}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_page_shows_each_step_attempts_stream_live_in_a_real_browser() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(STREAMING, Some("dash_streaming.yaml"), None)
        .await?;
    let worker = env.rust_worker();
    // Ten chunks 100 ms apart per attempt, once the page has sent the signal `go`.
    let task = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "dash_streaming")
                .context(json!({"count": 10, "pace_ms": 100, "fail_first": true})),
        )
        .await?;
    let report = clean_tour(
        "streams.mjs",
        &[("TASKER_URL", o.url()), ("TASK", task.id.to_string())],
    )
    .await?;
    let whole: String = (0..10).map(|i| format!("t{i}")).collect();
    assert_eq!(
        report["beforeSignal"],
        json!({"hidden": true, "boxes": 0}),
        "{report}"
    );
    let ended = report["ended"].as_array().cloned().unwrap_or_default();
    let seen: Vec<(String, bool, String, String)> = ended
        .iter()
        .map(|b| {
            (
                b["attempt"].as_str().unwrap_or_default().to_owned(),
                b["retry"].as_bool().unwrap_or(false),
                b["state"].as_str().unwrap_or_default().to_owned(),
                b["topics"][0]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("1".to_owned(), false, "ended".to_owned(), whole.clone()),
            ("2".to_owned(), true, "ended".to_owned(), whole.clone()),
        ],
        "{report}"
    );
    assert_eq!(o.wait(task.id).await?.state.to_string(), "complete");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
