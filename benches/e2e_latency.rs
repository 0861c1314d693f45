//! End-to-end latency of Tasker workflows on real PostgreSQL and RabbitMQ.
//!
//! Each sample is one task, timed from the create request (`POST /v1/tasks`) to the task's
//! completion notification — never by sleep-and-poll, which would quantize the figure.
//! A **floor** runs in the same process: per step one durable commit, a confirmed publish, a
//! consume, a confirmed publish back, a consume and another durable commit — the least the
//! hardware allows for the same chain — so every tier is also reported as a ratio to it.
//!
//! Run with `cargo make bench` (starts PostgreSQL and RabbitMQ first), or start them with
//! `cargo make services-start` and run `cargo bench --bench e2e_latency`.
//! Besides Criterion's own output, it prints p50/p95 per scenario and writes them to
//! `target/e2e_latency/summary.json`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use futures_util::StreamExt;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::runtime::Runtime;
use tokio::sync::broadcast;
use uuid::Uuid;

use tasker::{RunningOrchestrator, RunningWorker, TestEnv};
use tasker_broker::{BasicAckOptions, Broker, Outgoing, Publisher};
use tasker_orchestration::events::Event;

/// Fewest samples per scenario; the report says if Criterion took fewer.
const MIN_SAMPLES: usize = 200;

/// Latencies recorded per scenario, alongside Criterion's own statistics.
#[derive(Default, Clone)]
struct Samples(Arc<Mutex<BTreeMap<String, Vec<Duration>>>>);

impl Samples {
    fn record(&self, name: &str, d: Duration) {
        self.0
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .push(d);
    }
}

struct Stack {
    env: TestEnv,
    orchestrator: RunningOrchestrator,
    worker: RunningWorker,
    http: reqwest::Client,
}

impl Stack {
    async fn start() -> anyhow::Result<Stack> {
        let mut env = TestEnv::new().await.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\nStart the services first: `cargo make services-start` (or run `cargo make bench`)"
            )
        })?;
        env.config.orchestrator.sweep_interval_ms = 1_000;
        let orchestrator = env.orchestrator().await?;
        let worker = env.rust_worker();
        Ok(Stack {
            env,
            orchestrator,
            worker,
            http: reqwest::Client::new(),
        })
    }

    /// One task from create request to completion notification.
    async fn run(&self, name: &str, context: &Value) -> anyhow::Result<Duration> {
        let mut events = self.orchestrator.events().subscribe();
        let started = Instant::now();
        let resp = self
            .http
            .post(format!("{}/v1/tasks", self.orchestrator.url()))
            .json(&json!({"namespace": "rust_examples", "name": name, "context": context}))
            .send()
            .await?;
        anyhow::ensure!(
            resp.status().is_success(),
            "create failed: {}",
            resp.status()
        );
        let task: Value = resp.json().await?;
        let id: Uuid = task["id"].as_str().unwrap_or_default().parse()?;
        let state = wait_finished(&mut events, id).await?;
        let elapsed = started.elapsed();
        anyhow::ensure!(state == "complete", "task {id} ended {state}");
        Ok(elapsed)
    }
}

async fn wait_finished(
    events: &mut broadcast::Receiver<Event>,
    id: Uuid,
) -> anyhow::Result<String> {
    let wait = async {
        loop {
            if let Event::TaskFinished { task_id, state } = events.recv().await?
                && task_id == id
            {
                return anyhow::Ok(state.to_string());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .map_err(|_| anyhow::anyhow!("task {id} did not finish within 30 s"))?
}

/// The hardware floor for an n-step chain (see the module docs).
struct Floor {
    pool: PgPool,
    out: Publisher,
    back: Publisher,
    out_queue: String,
    back_queue: String,
    out_rx: lapin::Consumer,
    back_rx: lapin::Consumer,
}

impl Floor {
    async fn start(env: &TestEnv) -> anyhow::Result<Floor> {
        let pool = PgPool::connect(&env.config.database_url).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, n bigint NOT NULL)",
        )
        .execute(&pool)
        .await?;
        sqlx::query("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING")
            .execute(&pool)
            .await?;
        let p = format!("{}.floor", env.config.queue_prefix);
        let broker = Broker::connect(&env.config.amqp_url, &p, "bench-floor").await?;
        broker
            .declare(&["out".to_owned(), "back".to_owned()])
            .await?;
        let out_queue = tasker_shared::topology::steps_queue(&p, "out");
        let back_queue = tasker_shared::topology::steps_queue(&p, "back");
        Ok(Floor {
            out: broker.publisher().await?,
            back: broker.publisher().await?,
            out_rx: broker.consume(&out_queue, "floor-out", 16).await?,
            back_rx: broker.consume(&back_queue, "floor-back", 16).await?,
            out_queue,
            back_queue,
            pool,
        })
    }

    async fn commit(&self) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE bench_floor SET n = n + 1 WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn chain(&mut self, steps: usize) -> anyhow::Result<Duration> {
        let started = Instant::now();
        for _ in 0..steps {
            self.commit().await?;
            hop(&self.out, &self.out_queue, &mut self.out_rx).await?;
            hop(&self.back, &self.back_queue, &mut self.back_rx).await?;
            self.commit().await?;
        }
        Ok(started.elapsed())
    }
}

async fn hop(p: &Publisher, queue: &str, rx: &mut lapin::Consumer) -> anyhow::Result<()> {
    p.publish_all(&[Outgoing {
        queue: queue.to_owned(),
        payload: br#"{"step":"floor"}"#.to_vec(),
    }])
    .await?;
    let d = rx
        .next()
        .await
        .ok_or_else(|| anyhow::anyhow!("consumer closed"))??;
    d.ack(BasicAckOptions::default()).await?;
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let rt = Runtime::new()?;
    let stack = rt.block_on(Stack::start())?;
    let samples = Samples::default();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();

    let linear = json!({"value": 6});
    let diamond = json!({"value": 3});
    // Warm the path (connections, prepared statements) before measuring.
    for _ in 0..20 {
        rt.block_on(stack.run("linear", &linear))?;
    }
    let mut floor = rt.block_on(Floor::start(&stack.env))?;

    {
        let mut group = criterion.benchmark_group("e2e");
        group.sampling_mode(SamplingMode::Flat).sample_size(50);
        let s = samples.clone();
        group.bench_function("floor_4_steps", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let d = rt.block_on(floor.chain(4)).expect("floor chain");
                    s.record("floor_4_steps", d);
                    total += d;
                }
                total
            })
        });
        for (name, context) in [("linear", &linear), ("diamond", &diamond)] {
            let s = samples.clone();
            let label = format!("{name}_rust");
            group.bench_function(&label, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let d = rt.block_on(stack.run(name, context)).expect("task");
                        s.record(&label, d);
                        total += d;
                    }
                    total
                })
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let recorded = samples.0.lock().unwrap().clone();
    let floor_p50 = recorded
        .get("floor_4_steps")
        .map(|v| {
            let mut v = v.clone();
            v.sort();
            ms(percentile(&v, 0.5))
        })
        .unwrap_or(f64::NAN);
    println!();
    println!(
        "{:<22} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "scenario", "samples", "mean ms", "p50 ms", "p95 ms", "p95/p50", "x floor"
    );
    let mut summary = serde_json::Map::new();
    for (name, mut v) in recorded {
        v.sort();
        let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
        let (p50, p95) = (ms(percentile(&v, 0.5)), ms(percentile(&v, 0.95)));
        println!(
            "{:<22} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>8.2} {:>9.2}{}",
            name,
            v.len(),
            mean,
            p50,
            p95,
            p95 / p50,
            p50 / floor_p50,
            if v.len() < MIN_SAMPLES {
                "  (fewer samples than 200)"
            } else {
                ""
            }
        );
        summary.insert(
            name,
            json!({"samples": v.len(), "mean_ms": mean, "p50_ms": p50, "p95_ms": p95,
                   "ratio_to_floor": p50 / floor_p50}),
        );
    }
    let dir = tasker::repo_root().join("target/e2e_latency");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_vec_pretty(&Value::Object(summary))?,
    )?;
    rt.block_on(async {
        stack.worker.stop().await;
        stack.orchestrator.stop().await;
        stack.env.cleanup().await
    })?;
    Ok(())
}
