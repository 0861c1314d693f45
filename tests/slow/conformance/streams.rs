//! Streams across languages: a step of each language's worker emits 1,000 text chunks
//! (`stream_emitter`, its fixture handler in every language) and a client of another language
//! (`conformance-client URL stream TASK`) reads them all, in order, then the attempt's end.

use serde_json::{Value, json};
use tasker::TestEnv;

use crate::common::start_worker;
use crate::conformance_client;

/// Chunks each step emits.
const CHUNKS: usize = 1_000;

/// Each worker language, and the language of the client that reads its stream.
const PAIRS: [(&str, &str); 4] = [
    ("python", "typescript"),
    ("typescript", "ruby"),
    ("ruby", "python"),
    ("rust", "typescript"),
];

fn streaming(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: streaming\nversion: 1.0.0\n\
         steps:\n  - name: generate\n    handler: stream_emitter\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_language_streams_1000_chunks_that_a_client_of_another_reads() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    for (language, reader) in PAIRS {
        let namespace = format!("{language}_examples");
        let mut worker =
            start_worker(&env, language, &format!("{language}-streams"), &o.url()).await?;
        o.client
            .register_template(&streaming(&namespace), None, None)
            .await?;
        let task = o
            .client
            .create_task(
                &tasker_client::CreateTask::new(&namespace, "streaming")
                    .context(json!({ "count": CHUNKS })),
            )
            .await?;
        let stdout =
            conformance_client(reader, &[o.url(), "stream".into(), task.id.to_string()]).await?;
        let chunks: Vec<Value> = stdout
            .lines()
            .map(|l| {
                let (label, chunk) = l.split_once(' ').unwrap_or((l, "null"));
                anyhow::ensure!(label == "chunk", "{reader}: {l}");
                Ok(serde_json::from_str(chunk)?)
            })
            .collect::<anyhow::Result<_>>()?;
        assert_eq!(
            chunks.len(),
            CHUNKS + 1,
            "{language} → {reader}: every chunk and the end"
        );
        for (i, c) in chunks.iter().enumerate() {
            let want = if i < CHUNKS {
                json!({"offset": i, "attempt": 1, "seq": i, "text": format!("t{i}"), "end": false})
            } else {
                json!({"offset": i, "attempt": 1, "seq": i, "text": null, "end": true})
            };
            assert_eq!(c, &want, "{language} → {reader}: chunk {i}");
        }
        let done = o.wait(task.id).await?;
        assert_eq!(done.state, "complete", "{language}: {done:?}");
        assert_eq!(
            done.result,
            Some(json!({"generate": {"emitted": CHUNKS, "attempt": 1}})),
            "{language}"
        );
        worker.child.kill().await?;
    }
    o.stop().await;
    env.cleanup().await
}
