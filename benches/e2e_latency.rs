//! End-to-end latency of Tasker workflows on real PostgreSQL and RabbitMQ.
//!
//! Each sample is one task (or, for `concurrent_tasks_2x`, two at once), timed from the create
//! request (`POST /v1/tasks`) to the completion notification — never by sleep-and-poll, which
//! would quantize the figure. A **floor** runs in the same process: per step one durable commit,
//! a confirmed publish, a consume, a confirmed publish back, a consume and another durable
//! commit — the least the hardware allows for the same chain — and every scenario is reported as
//! a ratio to it.
//!
//! Tiers: 1 `linear_rust`, `diamond_rust`; 2 `conditional_rust`, `complex_dag_rust`,
//! `hierarchical_tree_rust`; 3 (two orchestrators, two workers) `single_task_linear`
//! (round-robin over both orchestrators), `concurrent_tasks_2x`; 4 `linear_<lang>`,
//! `diamond_<lang>` through the Ruby, Python and TypeScript workers (each skipped, saying why,
//! if its binding is not built), and `linear_rust_process`, `diamond_rust_process` through a
//! Rust worker in a process of its own as they are (tier 1's worker shares the bench's process
//! and runtime with the orchestrator): the FFI's own cost is the difference from those; and
//! `interleaved_linear_<lang>` for every worker process started, one linear task each in turn
//! (200 rounds), so that difference is read from tasks that ran side by side;
//! 5 `csv_products_1000_rows`.
//!
//! Run with `cargo make bench` (starts PostgreSQL and RabbitMQ first), or start them with
//! `cargo make services-start` and run `cargo bench --bench e2e_latency`. Besides Criterion's
//! output it prints mean/p50/p95 per scenario with a per-hop breakdown from the step timestamps
//! and writes them to `target/e2e_latency/summary.json`; `cargo make bench-report` turns that
//! into `docs/benchmarks/README.md`. `TASKER_BENCH_FILTER=linear` runs only matching scenarios;
//! `TASKER_BENCH_SLEEPING=10000` keeps that many tasks asleep (a wait step) during the run.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use futures_util::StreamExt;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::runtime::Runtime;
use uuid::Uuid;

use tasker::{
    Completions, RunningOrchestrator, RunningWorker, TestEnv, repo_root, write_bench_summary,
};
use tasker_broker::{BasicAckOptions, Broker, Outgoing, Publisher};
use tasker_client::CreateTask;
use tasker_shared::TaskState;

/// One sample: its latency and the tasks it timed.
type Run = (Duration, Vec<Uuid>);

/// Samples per scenario.
#[derive(Default, Clone)]
struct Samples(Arc<Mutex<BTreeMap<String, Vec<Run>>>>);

impl Samples {
    fn record(&self, name: &str, d: Duration, tasks: Vec<Uuid>) {
        let mut all = self.0.lock().unwrap();
        all.entry(name.to_owned()).or_default().push((d, tasks));
    }
}

struct Stack {
    env: TestEnv,
    orchestrators: Vec<RunningOrchestrator>,
    workers: Vec<RunningWorker>,
    processes: Vec<tokio::process::Child>,
}

impl Stack {
    /// `n` tasks asleep for an hour (one wait step each) while the benchmark runs
    /// (`TASKER_BENCH_SLEEPING`): timers must cost the hot path nothing.
    async fn sleepers(&self, n: usize) -> anyhow::Result<()> {
        let client = &self.orchestrators[0].client;
        let yaml = "namespace: bench_sleepers\nname: hour\nversion: '1'\nsteps:\n  - name: nap\n    wait: {sleep: 1h}\n";
        client
            .register_template(yaml, Some("hour.yaml"), None)
            .await?;
        let created: Vec<anyhow::Result<()>> = futures_util::stream::iter(0..n)
            .map(|_| async move {
                client
                    .create_task(&tasker_client::CreateTask::new("bench_sleepers", "hour"))
                    .await?;
                anyhow::Ok(())
            })
            .buffer_unordered(16)
            .collect()
            .await;
        created.into_iter().collect()
    }

    async fn start() -> anyhow::Result<Stack> {
        let mut env = TestEnv::new().await.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\nStart the services first: `cargo make services-start` (or run `cargo make bench`)"
            )
        })?;
        env.config.orchestrator.sweep_interval_ms = 1_000;
        env.config.orchestrator.templates = vec![repo_root().join("tests/fixtures/task_templates")];
        let orchestrator = env.orchestrator().await?;
        let worker = env.rust_worker();
        Ok(Stack {
            env,
            orchestrators: vec![orchestrator],
            workers: vec![worker],
            processes: Vec::new(),
        })
    }

    /// Tier 3: a second orchestrator and a second Rust worker.
    async fn grow(&mut self) -> anyhow::Result<()> {
        self.orchestrators.push(self.env.orchestrator().await?);
        self.workers.push(self.env.rust_worker());
        Ok(())
    }

    /// Starts a language's worker process (`workers/<lang>/conformance-worker`); for `rust`,
    /// this program as a Rust worker process ([`RUST_WORKER`]) for the Rust templates under
    /// the namespace `rust_process_examples`: the same fixture handlers as the in-process
    /// worker of tier 1, across a process boundary as every FFI worker is.
    async fn language_worker(&mut self, language: &str) -> anyhow::Result<()> {
        let (mut command, templates) = if language == "rust" {
            let mut command = tokio::process::Command::new(std::env::current_exe()?);
            command.env(RUST_WORKER, "1");
            (command, rust_process_templates()?)
        } else {
            let entry = repo_root()
                .join("workers")
                .join(language)
                .join("conformance-worker");
            anyhow::ensure!(entry.exists(), "{} is not built", entry.display());
            (
                tokio::process::Command::new(entry),
                tasker::templates(language),
            )
        };
        let cfg = &self.env.config;
        let mut child = command
            .arg("--templates")
            .arg(templates)
            .arg("--health-port")
            .arg("0")
            .env("DATABASE_URL", &cfg.database_url)
            .env("AMQP_URL", &cfg.amqp_url)
            .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
            .env(
                "TASKER_WORKER__ORCHESTRATOR_URL",
                self.orchestrators[0].url(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if line.contains("tasker worker ready") {
                    return anyhow::Ok(());
                }
            }
            anyhow::bail!("the {language} worker exited before it was ready")
        })
        .await??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.processes.push(child);
        Ok(())
    }

    async fn create(
        &self,
        via: usize,
        namespace: &str,
        name: &str,
        context: &Value,
    ) -> anyhow::Result<Uuid> {
        let o = &self.orchestrators[via % self.orchestrators.len()];
        let task = o
            .client
            .create_task(&CreateTask::new(namespace, name).context(context.clone()))
            .await?;
        Ok(task.id)
    }

    /// `count` tasks at once, created round-robin from orchestrator `via`; returns the time
    /// until the last completion notification and the task ids.
    async fn run(
        &self,
        via: usize,
        count: usize,
        namespace: &str,
        name: &str,
        context: &Value,
    ) -> anyhow::Result<(Duration, Vec<Uuid>)> {
        let mut completions: Vec<Completions> =
            self.orchestrators.iter().map(|o| o.completions()).collect();
        let started = Instant::now();
        let mut ids = Vec::with_capacity(count);
        for k in 0..count {
            ids.push(self.create(via + k, namespace, name, context).await?);
        }
        // Each task's completion is announced on the orchestrator it was created on (directly,
        // or relayed from PostgreSQL NOTIFY if another orchestrator finished it).
        for (k, id) in ids.iter().enumerate() {
            let rx = &mut completions[(via + k) % self.orchestrators.len()];
            let state = rx.wait_for(*id, Duration::from_secs(60)).await?;
            anyhow::ensure!(state == TaskState::Complete, "task {id} ended {state}");
        }
        Ok((started.elapsed(), ids))
    }
}

/// The hardware floor for an n-step chain (see the module docs).
struct Floor {
    pool: PgPool,
    out: Publisher,
    back: Publisher,
    out_queue: String,
    back_queue: String,
    out_rx: tasker_broker::Subscription,
    back_rx: tasker_broker::Subscription,
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
        let out_queue = tasker_broker::topology::steps_queue(&p, "out");
        let back_queue = tasker_broker::topology::steps_queue(&p, "back");
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

async fn hop(
    p: &Publisher,
    queue: &str,
    rx: &mut tasker_broker::Subscription,
) -> anyhow::Result<()> {
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

/// Mean per-hop times (ms) of the completed steps of `tasks`, from the timestamps the API
/// reports for each step.
async fn hops(client: &tasker_client::Client, tasks: &[Uuid]) -> anyhow::Result<Value> {
    fn gap(
        a: Option<chrono::DateTime<chrono::Utc>>,
        b: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Option<f64> {
        Some((b? - a?).num_microseconds()? as f64 / 1000.0)
    }
    fn mean(v: &[f64]) -> Option<f64> {
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
    let (mut queue, mut handler, mut result, mut total) = (vec![], vec![], vec![], vec![]);
    for &id in tasks {
        let task = client.task(id, None).await?;
        total.extend(task.duration_ms);
        for s in client.steps(id).await? {
            if s.state != "completed" {
                continue;
            }
            queue.extend(gap(s.dispatched_at, s.started_at));
            handler.extend(gap(s.started_at, s.finished_at));
            result.extend(gap(s.finished_at, s.processed_at));
        }
    }
    Ok(json!({
        "queue_wait_ms": mean(&queue), "handler_ms": mean(&handler),
        "result_to_commit_ms": mean(&result), "task_created_to_completed_ms": mean(&total),
    }))
}

/// A scenario: name, namespace, template, context, tasks per sample, orchestrator tier.
struct Scenario {
    name: String,
    namespace: String,
    template: &'static str,
    context: Value,
    concurrent: usize,
}

fn scenario(name: &str, namespace: &str, template: &'static str, context: Value) -> Scenario {
    Scenario {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        template,
        context,
        concurrent: 1,
    }
}

/// Rounds of the interleaved tier 4 run: one linear task per worker process each.
const INTERLEAVED_ROUNDS: usize = 200;

/// Set in the environment of this program started as a Rust worker process (tier 4).
const RUST_WORKER: &str = "TASKER_BENCH_RUST_WORKER";

/// The Rust fixture templates under the namespace `rust_process_examples`, written to a folder
/// of the target directory, for the Rust worker process.
fn rust_process_templates() -> anyhow::Result<std::path::PathBuf> {
    let dir = tasker::target_dir()
        .join("e2e_latency")
        .join("rust_process_templates");
    std::fs::create_dir_all(&dir)?;
    for name in ["linear", "diamond"] {
        let src = std::fs::read_to_string(tasker::templates("rust").join(format!("{name}.yaml")))?;
        let moved = src.replace(
            "namespace: rust_examples",
            "namespace: rust_process_examples",
        );
        anyhow::ensure!(moved != src, "{name}.yaml names no rust_examples namespace");
        std::fs::write(dir.join(format!("{name}.yaml")), moved)?;
    }
    Ok(dir)
}

fn main() -> anyhow::Result<()> {
    if std::env::var_os(RUST_WORKER).is_some() {
        let code = tasker_worker::run(tasker_worker_rust::registry());
        std::process::exit(i32::from(code != std::process::ExitCode::SUCCESS));
    }
    let filter = std::env::var("TASKER_BENCH_FILTER").unwrap_or_default();
    let wanted = |name: &str| filter.is_empty() || name.contains(filter.as_str());
    let rt = Runtime::new()?;
    let mut stack = rt.block_on(Stack::start())?;
    let samples = Samples::default();
    let mut notes: Vec<String> = Vec::new();
    let sleeping: usize = std::env::var("TASKER_BENCH_SLEEPING")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if sleeping > 0 {
        rt.block_on(stack.sleepers(sleeping))?;
        notes.push(format!(
            "{sleeping} tasks sleeping (a wait step of an hour) all through the run"
        ));
    }
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let csv = repo_root().join("tests/fixtures/products.csv");
    let rust = "rust_examples";

    // Warm the path (connections, statement caches) before measuring.
    for _ in 0..20 {
        rt.block_on(stack.run(0, 1, rust, "linear", &json!({"value": 6})))?;
    }
    let mut floor = rt.block_on(Floor::start(&stack.env))?;

    let mut tiers: Vec<(&str, Vec<Scenario>)> = vec![
        (
            "tier1",
            vec![
                scenario("linear_rust", rust, "linear", json!({"value": 6})),
                scenario("diamond_rust", rust, "diamond", json!({"value": 3})),
            ],
        ),
        (
            "tier2",
            vec![
                scenario(
                    "conditional_rust",
                    rust,
                    "conditional",
                    json!({"value": 42}),
                ),
                scenario("complex_dag_rust", rust, "complex_dag", json!({"value": 2})),
                scenario(
                    "hierarchical_tree_rust",
                    rust,
                    "hierarchical_tree",
                    json!({"value": 5}),
                ),
            ],
        ),
        (
            "tier5",
            vec![scenario(
                "csv_products_1000_rows",
                rust,
                "csv_products",
                json!({"csv_path": csv, "batch_size": 200}),
            )],
        ),
    ];
    let mut ffi = Vec::new();
    // Worker processes started, by label: their linear tasks also run interleaved (below).
    let mut started: Vec<&str> = Vec::new();
    // `rust` is the Rust worker in a process of its own, its scenarios `*_rust_process`.
    for (language, label) in [
        ("rust", "rust_process"),
        ("ruby", "ruby"),
        ("python", "python"),
        ("typescript", "typescript"),
    ] {
        let (linear, diamond) = (format!("linear_{label}"), format!("diamond_{label}"));
        // Started when one of its scenarios is wanted (`linear` wants every linear_<lang>).
        if !wanted(&linear) && !wanted(&diamond) {
            continue;
        }
        match rt.block_on(stack.language_worker(language)) {
            Ok(()) => {
                started.push(label);
                let ns = format!("{label}_examples");
                ffi.push(scenario(&linear, &ns, "linear", json!({"value": 6})));
                ffi.push(scenario(&diamond, &ns, "diamond", json!({"value": 3})));
            }
            Err(e) => notes.push(format!("tier 4 {label}: skipped ({e:#})")),
        }
    }
    tiers.push(("tier4", ffi));

    let mut group = criterion.benchmark_group("e2e");
    group.sampling_mode(SamplingMode::Flat).sample_size(50);
    {
        let s = samples.clone();
        group.bench_function("floor_4_steps", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let d = rt.block_on(floor.chain(4)).expect("floor chain");
                    s.record("floor_4_steps", d, Vec::new());
                    total += d;
                }
                total
            })
        });
    }
    let bench = |group: &mut criterion::BenchmarkGroup<_>,
                 stack: &Stack,
                 sc: &Scenario,
                 round_robin: bool| {
        if !wanted(&sc.name) {
            return;
        }
        let s = samples.clone();
        let mut turn = 0usize;
        group.bench_function(&sc.name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let via = if round_robin { turn } else { 0 };
                    turn += 1;
                    let (d, ids) = rt
                        .block_on(stack.run(
                            via,
                            sc.concurrent,
                            &sc.namespace,
                            sc.template,
                            &sc.context,
                        ))
                        .expect("task");
                    s.record(&sc.name, d, ids);
                    total += d;
                }
                total
            })
        });
    };
    for (_, scenarios) in &tiers {
        for sc in scenarios {
            bench(&mut group, &stack, sc, false);
        }
    }
    // Tier 4, interleaved: one linear task per worker process in turn (the order rotating each
    // round), so every language meets the same moments of this machine's noise; scenarios run
    // one after another can land minutes and several milliseconds apart. The FFI overhead is
    // read against `interleaved_linear_rust_process` from these.
    let interleaved: Vec<(String, String)> = started
        .iter()
        .map(|label| {
            (
                format!("interleaved_linear_{label}"),
                format!("{label}_examples"),
            )
        })
        .filter(|(name, _)| wanted(name))
        .collect();
    if interleaved.len() > 1 {
        for round in 0..INTERLEAVED_ROUNDS {
            for k in 0..interleaved.len() {
                let (name, ns) = &interleaved[(round + k) % interleaved.len()];
                let (d, ids) = rt.block_on(stack.run(0, 1, ns, "linear", &json!({"value": 6})))?;
                samples.record(name, d, ids);
            }
        }
    }
    // Tier 3: a second orchestrator and worker; tasks round-robin over both orchestrators.
    if wanted("single_task_linear") || wanted("concurrent_tasks_2x") {
        rt.block_on(stack.grow())?;
        let single = scenario("single_task_linear", rust, "linear", json!({"value": 6}));
        let mut double = scenario("concurrent_tasks_2x", rust, "linear", json!({"value": 6}));
        double.concurrent = 2;
        bench(&mut group, &stack, &single, true);
        bench(&mut group, &stack, &double, true);
    }
    group.finish();
    criterion.final_summary();

    let recorded = samples.0.lock().unwrap().clone();
    let floor_p50 = recorded
        .get("floor_4_steps")
        .map(|v| {
            let mut d: Vec<Duration> = v.iter().map(|(d, _)| *d).collect();
            d.sort();
            ms(percentile(&d, 0.5))
        })
        .unwrap_or(f64::NAN);
    println!();
    println!(
        "{:<24} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "scenario",
        "samples",
        "mean ms",
        "p50 ms",
        "p95 ms",
        "p95/p50",
        "x floor",
        "queue",
        "handler",
        "result"
    );
    let client = stack.orchestrators[0].client.clone();
    let mut summary = serde_json::Map::new();
    for (name, runs) in recorded {
        let mut d: Vec<Duration> = runs.iter().map(|(d, _)| *d).collect();
        d.sort();
        let mean = d.iter().map(|x| ms(*x)).sum::<f64>() / d.len() as f64;
        let (p50, p95) = (ms(percentile(&d, 0.5)), ms(percentile(&d, 0.95)));
        let tasks: Vec<Uuid> = runs
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        let hop = if tasks.is_empty() {
            json!({})
        } else {
            rt.block_on(hops(&client, &tasks))?
        };
        let f = |k: &str| {
            hop[k]
                .as_f64()
                .map(|v| format!("{v:.2}"))
                .unwrap_or_default()
        };
        println!(
            "{:<24} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>8.2} {:>8.2} {:>8} {:>8} {:>8}",
            name,
            d.len(),
            mean,
            p50,
            p95,
            p95 / p50,
            p50 / floor_p50,
            f("queue_wait_ms"),
            f("handler_ms"),
            f("result_to_commit_ms")
        );
        summary.insert(
            name,
            json!({
                "samples": d.len(), "mean_ms": mean, "p50_ms": p50, "p95_ms": p95,
                "p95_over_p50": p95 / p50, "ratio_to_floor": p50 / floor_p50, "hops": hop,
            }),
        );
    }
    write_bench_summary("e2e_latency", json!({ "scenarios": summary }), &notes)?;
    rt.block_on(async {
        for mut p in stack.processes {
            let _ = p.kill().await;
        }
        for w in stack.workers {
            w.stop().await;
        }
        for o in stack.orchestrators {
            o.stop().await;
        }
        stack.env.cleanup().await
    })?;
    Ok(())
}
