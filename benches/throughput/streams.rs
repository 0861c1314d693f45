//! Step streams (`TASKER_BENCH_FILTER=streams`; docs/streams.md), in one run:
//! - **the floor**: one broker hop at idle — a message published to a queue, received by its
//!   consumer — the part of a chunk's way no Tasker code can shorten;
//! - **emit → receive**: a Rust step emits 1,000 text chunks, one every 2 ms, and a client
//!   following the task's stream as Server-Sent Events receives them; a chunk's latency is from
//!   its `at` (when the handler emitted it) to its arrival (one host, one clock), for every
//!   chunk and for those emitted once the reader was attached (the task is created first, so
//!   its first chunks wait for the reader's connection);
//! - **Python → TypeScript**: the same from a Python step (the fixture `stream_emitter`, its
//!   chunks stamped with their emission time) to the TypeScript client
//!   (`stream_follow.mjs`, which creates the task, then follows it);
//! - **1,000 readers**: the same stream followed by 1,000 connections at once — the
//!   orchestrator's memory before and while they read, every reader's chunk count, and the
//!   `linear` chain's latency (closed loop, 8 clients) without and with them.

use futures_util::StreamExt;
use tasker_client::StreamQuery;

use super::*;

/// Chunks a step emits, and the pause before each.
const CHUNKS: u64 = 1_000;
const PACE_MS: u64 = 2;

/// Readers of one stream at once.
const READERS: usize = 1_000;

const STREAMING: &str = "namespace: rust_examples
name: bench_streaming
version: '1'
steps:
  - name: generate
    handler: stream_emitter
    timeout_seconds: 600
";

fn millis(mut samples: Vec<f64>) -> Value {
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
        samples.get(i).copied().unwrap_or(f64::NAN)
    };
    json!({"samples": samples.len(), "p50_ms": at(0.5), "p95_ms": at(0.95), "p99_ms": at(0.99),
           "max_ms": samples.last().copied().unwrap_or(f64::NAN)})
}

/// One broker hop at idle: a message published (not waiting for its confirm, as the live path
/// does not) until its consumer has it, `n` times, 2 ms apart.
async fn broker_hop(env: &TestEnv, n: usize) -> anyhow::Result<Value> {
    let prefix = format!("{}.hop", env.config.queue_prefix);
    let broker = Broker::connect(&env.config.amqp_url, &prefix, "bench-hop").await?;
    broker.declare(&["hop".to_owned()]).await?;
    let queue = topology::steps_queue(&prefix, "hop");
    let mut consumer = broker.consume(&queue, "bench-hop", 16).await?;
    let publisher = broker.publisher().await?;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let sent = Instant::now();
        let out = [Outgoing {
            queue: queue.clone(),
            payload: b"[]".to_vec(),
        }];
        let round = publisher.send_all(&out).await?;
        let delivery = consumer
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("the hop's consumer ended"))??;
        samples.push(sent.elapsed().as_secs_f64() * 1000.0);
        delivery.ack(BasicAckOptions::default()).await?;
        round.confirmed().await?;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    broker.close().await;
    Ok(millis(samples))
}

/// Starts a task whose step emits `count` chunks, `pace_ms` apart.
async fn emitting(stack: &Stack, count: u64, pace_ms: u64) -> anyhow::Result<Uuid> {
    let task = CreateTask::new("rust_examples", "bench_streaming")
        .context(json!({"count": count, "pace_ms": pace_ms}));
    Ok(stack.client.create_task(&task).await?.id)
}

/// One chunk as its reader saw it: when it was emitted (ms since the epoch) and how late it
/// arrived (ms).
type Sample = (f64, f64);

/// Follows task `id`'s stream to its end: each chunk's emission and latency.
async fn follow(client: &Client, id: Uuid) -> anyhow::Result<Vec<Sample>> {
    let mut stream = client.stream(id, &StreamQuery::default());
    let mut samples = Vec::new();
    while let Some(chunk) = stream.next().await? {
        if !chunk.end {
            let late = chrono::Utc::now() - chunk.at;
            let emitted = chunk.at.timestamp_micros() as f64 / 1000.0;
            samples.push((
                emitted,
                late.num_microseconds().unwrap_or(0) as f64 / 1000.0,
            ));
        }
    }
    Ok(samples)
}

/// Latencies of every chunk, and of the chunks emitted once the reader was attached (after its
/// first chunk arrived): the task is created before its reader connects, so the first chunks
/// wait for the connection (client start, request, catch-up page), which is not the live path.
fn latencies(samples: &[Sample]) -> Value {
    let attached = samples
        .first()
        .map_or(f64::INFINITY, |(at, late)| at + late);
    let all = samples.iter().map(|s| s.1).collect();
    let live = samples
        .iter()
        .filter(|s| s.0 > attached)
        .map(|s| s.1)
        .collect();
    json!({"all": millis(all), "attached": millis(live)})
}

async fn emit_to_receive(stack: &Stack) -> anyhow::Result<Value> {
    // Warm: connections, statements, the stream's first batch.
    let warm = emitting(stack, 20, PACE_MS).await?;
    follow(&stack.client, warm).await?;
    let id = emitting(stack, CHUNKS, PACE_MS).await?;
    let samples = follow(&stack.client, id).await?;
    anyhow::ensure!(
        samples.len() as u64 == CHUNKS,
        "{} of {CHUNKS} chunks received",
        samples.len()
    );
    Ok(latencies(&samples))
}

/// A Python step emits `CHUNKS` chunks, `PACE_MS` apart, that the TypeScript client follows.
/// The Python worker is the stack's (started before the stack is shared).
async fn python_to_typescript(stack: &Stack) -> anyhow::Result<Value> {
    let yaml = STREAMING
        .replace("rust_examples", "python_examples")
        .replace("bench_streaming", "bench_streaming_py");
    stack
        .client
        .register_template(&yaml, Some("bench_streaming_py.yaml"), Some("bench"))
        .await?;
    let script = repo_root().join("benches/throughput/stream_follow.mjs");
    let follow = |count: u64| {
        let context = json!({"count": count, "pace_ms": PACE_MS, "stamp": true}).to_string();
        let mut node = Command::new("node");
        node.arg(&script)
            .args([stack.url.as_str(), "python_examples", "bench_streaming_py"])
            .arg(context)
            .kill_on_drop(true);
        async move {
            let out = node.output().await.context("running node")?;
            anyhow::ensure!(
                out.status.success(),
                "stream_follow.mjs failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let answer: Value = serde_json::from_slice(&out.stdout)?;
            let samples: Vec<Sample> = serde_json::from_value(answer["samples"].clone())?;
            anyhow::Ok(samples)
        }
    };
    follow(20).await?;
    let samples = follow(CHUNKS).await?;
    anyhow::ensure!(
        samples.len() as u64 == CHUNKS,
        "{} of {CHUNKS} chunks received",
        samples.len()
    );
    Ok(latencies(&samples))
}

/// `READERS` connections follow one stream while the `linear` chain runs beside them.
async fn many_readers(stack: &Arc<Stack>, w: Window) -> anyhow::Result<Value> {
    let tasks = Tasks::linear_rust(stack);
    for _ in 0..10 {
        tasks.one().await?;
    }
    let alone = closed_loop(&tasks, 8, w).await;
    print_level("linear_rust c=8 no readers", &alone);
    let rss = |p: &Process| p.memory().map(|(rss, _)| rss).unwrap_or(0);
    let before = rss(&stack.orchestrator);
    // Long enough to outlast the measured window.
    let pace = 10;
    let count = (w.warmup + w.measure).as_millis() as u64 / pace + 300;
    let id = emitting(stack, count, pace).await?;
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..READERS {
        // Each its own connection, as separate browsers or services would read.
        let client = Client::new(&stack.url);
        readers.spawn(async move { follow(&client, id).await.map(|l| l.len()) });
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let beside = closed_loop(&tasks, 8, w).await;
    print_level("linear_rust c=8 beside 1,000 readers", &beside);
    let during = rss(&stack.orchestrator);
    let mut received = Vec::new();
    while let Some(r) = readers.join_next().await {
        received.push(r??);
    }
    let complete = received.iter().filter(|&&n| n as u64 == count).count();
    println!(
        "{READERS} readers: orchestrator RSS {:.1} MiB before, {:.1} MiB while they read; \
         {complete} of them received all {count} chunks",
        mib(before),
        mib(during)
    );
    Ok(json!({
        "readers": READERS, "chunks": count, "readers_with_every_chunk": complete,
        "orchestrator_rss_before_mib": mib(before), "orchestrator_rss_with_readers_mib": mib(during),
        "linear_c8_alone": alone, "linear_c8_beside_readers": beside,
        "p99_rise": beside.p99_ms / alone.p99_ms - 1.0,
    }))
}

pub(crate) async fn run(stack: &Arc<Stack>, w: Window) -> Value {
    let measured = async {
        stack
            .client
            .register_template(STREAMING, Some("bench_streaming.yaml"), Some("bench"))
            .await?;
        let hop = broker_hop(&stack.env, 1_000).await?;
        println!("streams: one broker hop at idle {hop}");
        let stream = emit_to_receive(stack).await?;
        println!("streams: emit -> receive, {CHUNKS} chunks {PACE_MS} ms apart: {stream}");
        let polyglot = python_to_typescript(stack)
            .await
            .unwrap_or_else(|e| json!({"failed": format!("{e:#}")}));
        println!("streams: Python step -> TypeScript client, {CHUNKS} chunks: {polyglot}");
        let readers = many_readers(stack, w).await?;
        anyhow::Ok(json!({"broker_hop": hop, "emit_to_receive": stream,
                          "python_to_typescript": polyglot, "readers": readers}))
    };
    measured
        .await
        .unwrap_or_else(|e: anyhow::Error| json!({"failed": format!("{e:#}")}))
}
