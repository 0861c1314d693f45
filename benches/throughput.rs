//! Throughput of Tasker under load, on real PostgreSQL and RabbitMQ, with the orchestrator and
//! the workers as separate processes (the release binaries; `cargo make bench-throughput`
//! builds them first).
//!
//! For each scenario (linear 4 steps, diamond, a 100-way fan-out on the Rust worker, linear on
//! the Python worker):
//! - **closed loop**: `C` clients each create a task through the REST API and wait for its
//!   completion, again and again, for each concurrency `C` of `TASKER_THROUGHPUT_CONCURRENCY`
//!   (default `1,8,32,64,128`); the best level is *saturation*;
//! - **open loop**: tasks offered at a steady 25/50/75% of the saturated rate, each timed from
//!   its create request to its completion;
//! - the **batch sizes** formed at each hop in that time (results per transaction, messages
//!   per publish round, messages per consume, results per confirm round, steps per FFI call),
//!   read from the processes' Prometheus histograms.
//!
//! Completion is the orchestrator's `pg_notify` (one LISTEN connection for the whole
//! generator), never a poll. The generator is one Rust process over `tasker-client`; it never
//! waits on itself (each client is a tokio task, the pacer spawns one per offered task).
//!
//! Beside them, in the same run:
//! - a **floor**: the same hops per step (a durable commit, a confirmed publish, a consume, a
//!   confirmed publish back, a consume, a durable commit) with commits and confirms pipelined
//!   and batched as far as they go — the most this machine allows for 4-step chains — driven
//!   closed- and open-loop like the scenarios, so each figure has the floor's beside it;
//! - a **peer**: a 4-task Celery chain over the same RabbitMQ (`benches/peers/celery_chain.py`,
//!   run with `TASKER_CELERY_PYTHON`, which the cargo-make task sets up in a throwaway venv),
//!   and `linear_rust` once more, open loop at the rate the peer was offered at 50% of its
//!   saturation, to compare latencies at one load;
//! - **scale**: one 100,000-step fan-out, timed end to end, with the peak resident memory of the
//!   orchestrator and the worker sampled while it runs;
//! - **the polyglot pipeline** (`polyglot/pipeline`: TypeScript → Rust → Python → Ruby →
//!   TypeScript, one task per batch of events): `TASKER_PIPELINE_EVENTS` (100,000) events at each
//!   batch size of `TASKER_PIPELINE_BATCHES` (1,10,100,1000), 256 tasks in flight, the aggregates
//!   compared with the oracle (`tasker::pipeline`), events/s end to end beside the oracle's own
//!   in-process rate, each stage's time at the worker (hand-out to outcome) and in the queue, and
//!   the CPU seconds each process (PostgreSQL, RabbitMQ, orchestrator, workers) used in the run;
//! - **fair sharing** (`fair`): a high-priority task's first step behind a low-priority backlog
//!   against idle, a concurrency limit per customer, a rate limit after a pause
//!   (`throughput/fair.rs`);
//! - **operations by filter** (`operations`): a dry run's count, a retry of 100,000 failed tasks
//!   across a SIGKILL of the orchestrator, and a cancel of them (`throughput/operations.rs`);
//! - **scale** (`scale`): 10,000 tasks in one bulk request, and the latency of a 1,000 steps/s
//!   load while 100,000 old finished tasks are purged (`throughput/scale.rs`);
//! - **events** (`events`): 10,000 events in one batch, each starting a task through a trigger,
//!   beside the same tasks created in one bulk request (`throughput/events.rs`).
//!
//! Figures go to stdout and `target/throughput/summary.json`; `cargo make bench-report` turns them
//! into `docs/benchmarks/throughput.md`. `TASKER_BENCH_FILTER=linear_rust` runs only matching
//! scenarios (several, comma-separated: `floor,linear_rust,fanout_100k,celery`); `TASKER_THROUGHPUT_SECONDS` sets the measured time per level (default 5);
//! `TASKER_THROUGHPUT_RATES=200,400` also offers those fixed rates (tasks/s) in open loop, printed
//! only, to compare two builds at the same load.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use uuid::Uuid;

use tasker::{TestEnv, repo_root, target_dir, templates, workspace_binary, write_bench_summary};

#[path = "throughput/events.rs"]
mod events;
#[path = "throughput/fair.rs"]
mod fair;
#[path = "throughput/operations.rs"]
mod operations;
#[path = "throughput/scale.rs"]
mod scale;
use tasker_broker::{BasicAckOptions, Broker, Outgoing, next_batch, topology};
use tasker_client::{Client, CreateTask};

// ---------------------------------------------------------------------------------------------
// Processes

/// A Tasker process started for the benchmark; killed on drop.
struct Process {
    child: Child,
    pid: u32,
}

impl Process {
    /// Starts `command` and waits (up to a minute) for a line containing `ready` on its
    /// stdout or stderr; the rest of its output is drained.
    async fn start(mut command: Command, what: &str, ready: &str) -> anyhow::Result<Process> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {what}"))?;
        let pid = child.id().context("no pid")?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let mut seen = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = rx.recv().await {
                if line.contains(ready) {
                    return true;
                }
                seen.push(line);
            }
            false
        })
        .await
        .unwrap_or(false);
        anyhow::ensure!(
            found,
            "{what} did not become ready; its output:\n{}",
            seen.join("\n")
        );
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        Ok(Process { child, pid })
    }

    /// Resident memory now and at its peak (VmRSS, VmHWM), in bytes.
    fn memory(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = status.lines().find(|l| l.starts_with(name))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

fn env_for(command: &mut Command, env: &TestEnv) {
    let c = &env.config;
    command
        .env("DATABASE_URL", &c.database_url)
        .env("AMQP_URL", &c.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &c.queue_prefix)
        // The bench measures the engine: no token to check (a check costs a hash and a map
        // look-up per request).
        .env("TASKER_ORCHESTRATOR__AUTH", "off")
        .env(
            "RUST_LOG",
            "warn,tasker_orchestration=info,tasker_orchestrator=info",
        )
        .env("NO_COLOR", "1");
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The benchmark's world: a database and queue prefix of its own, one orchestrator, one Rust
/// worker, optionally the Python worker.
struct Stack {
    env: TestEnv,
    url: String,
    client: Client,
    orchestrator: Process,
    workers: BTreeMap<&'static str, (Process, String)>,
    done: Completions,
}

impl Stack {
    async fn start() -> anyhow::Result<Stack> {
        let env = TestEnv::new().await.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\nStart the services first: `cargo make services-start` (or run `cargo make bench-throughput`)"
            )
        })?;
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}");
        let mut command = Command::new(workspace_binary("tasker-orchestrator")?);
        command
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--templates")
            .arg(repo_root().join("tests/fixtures/task_templates"));
        env_for(&mut command, &env);
        let orchestrator =
            Process::start(command, "the orchestrator", "tasker-orchestrator listening").await?;
        let done = Completions::listen(&env.config.database_url).await?;
        let mut stack = Stack {
            client: Client::new(&url),
            url,
            env,
            orchestrator,
            workers: BTreeMap::new(),
            done,
        };
        stack.worker("rust").await?;
        Ok(stack)
    }

    /// Starts the worker of `language` (the Rust binary, or a binding's conformance worker).
    async fn worker(&mut self, language: &'static str) -> anyhow::Result<()> {
        self.worker_with(language, &[]).await
    }

    /// [`Stack::worker`] with more environment variables (`TASKER_WORKER__…` settings); a
    /// worker of that language already running is stopped first.
    async fn worker_with(
        &mut self,
        language: &'static str,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<()> {
        if let Some((running, _)) = self.workers.remove(language) {
            running.stop().await;
        }
        let health = free_port()?;
        let mut command = if language == "rust" {
            Command::new(workspace_binary("tasker-worker-rust")?)
        } else {
            let entry = repo_root()
                .join("workers")
                .join(language)
                .join("conformance-worker");
            anyhow::ensure!(
                entry.exists(),
                "{} is not built (workers/{language}/build.sh)",
                entry.display()
            );
            Command::new(entry)
        };
        command
            .arg("--templates")
            .arg(templates(language))
            .arg("--health-port")
            .arg(health.to_string())
            .env("TASKER_WORKER__ORCHESTRATOR_URL", &self.url)
            .env("TASKER_WORKER__REGISTER_TEMPLATES", "false");
        env_for(&mut command, &self.env);
        command.envs(vars.iter().copied());
        let process = Process::start(
            command,
            &format!("the {language} worker"),
            "tasker worker ready",
        )
        .await?;
        self.workers.insert(
            language,
            (process, format!("http://127.0.0.1:{health}/metrics")),
        );
        Ok(())
    }

    /// Creates one task; returns when it finished, with its latency from the create request.
    async fn one(&self, sc: &Scenario) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let task = self
            .client
            .create_task(&CreateTask::new(&sc.namespace, sc.template).context(sc.context.clone()))
            .await?;
        let state = self.done.wait(task.id, Duration::from_secs(120)).await?;
        anyhow::ensure!(state == "complete", "task {} ended {state}", task.id);
        Ok(started.elapsed())
    }

    /// Every `_batch_size` histogram of the orchestrator and the workers, as Prometheus text.
    async fn histograms(&self) -> Histograms {
        let mut sources = vec![("orchestrator".to_owned(), format!("{}/metrics", self.url))];
        for (language, (_, url)) in &self.workers {
            sources.push((format!("{language} worker"), url.clone()));
        }
        let mut all = Histograms::default();
        for (source, url) in sources {
            if let Ok(resp) = reqwest::get(&url).await
                && resp.status().is_success()
                && let Ok(text) = resp.text().await
            {
                all.parse(&source, &text);
            }
        }
        all
    }

    async fn stop(self) -> anyhow::Result<()> {
        for (_, (p, _)) in self.workers {
            p.stop().await;
        }
        self.orchestrator.stop().await;
        self.env.cleanup().await
    }
}

// ---------------------------------------------------------------------------------------------
// Completions

/// Task completions, from the orchestrator's `tasker_task_finished` notifications on one LISTEN
/// connection. A completion may arrive before its create request returned; it waits here.
#[derive(Clone)]
struct Completions(Arc<Mutex<HashMap<Uuid, Entry>>>);

enum Entry {
    Waiting(oneshot::Sender<String>),
    Done(String),
}

impl Completions {
    async fn listen(database_url: &str) -> anyhow::Result<Completions> {
        let mut listener = PgListener::connect(database_url).await?;
        listener.listen("tasker_task_finished").await?;
        let map: Arc<Mutex<HashMap<Uuid, Entry>>> = Arc::default();
        let shared = map.clone();
        tokio::spawn(async move {
            while let Ok(n) = listener.recv().await {
                let Some((id, state)) = n.payload().split_once(':') else {
                    continue;
                };
                let Ok(id) = id.parse::<Uuid>() else { continue };
                let mut map = shared.lock().unwrap();
                match map.remove(&id) {
                    Some(Entry::Waiting(tx)) => {
                        let _ = tx.send(state.to_owned());
                    }
                    _ => {
                        map.insert(id, Entry::Done(state.to_owned()));
                    }
                }
            }
        });
        Ok(Completions(map))
    }

    async fn wait(&self, id: Uuid, timeout: Duration) -> anyhow::Result<String> {
        let rx = {
            let mut map = self.0.lock().unwrap();
            if let Some(Entry::Done(state)) = map.remove(&id) {
                return Ok(state);
            }
            let (tx, rx) = oneshot::channel();
            map.insert(id, Entry::Waiting(tx));
            rx
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(state)) => Ok(state),
            _ => anyhow::bail!("task {id} did not finish within {timeout:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Load

/// What the load generators drive: one task (or one floor chain) from its start to its end.
trait Load: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn steps(&self) -> usize;
    /// Runs one; returns its latency.
    fn one(&self) -> impl std::future::Future<Output = anyhow::Result<Duration>> + Send;
    /// The processes' batch-size histograms so far (none by default).
    fn histograms(&self) -> impl std::future::Future<Output = Histograms> + Send {
        async { Histograms::default() }
    }
}

/// A scenario's tasks, through the stack's REST API.
struct Tasks {
    stack: Arc<Stack>,
    sc: Scenario,
}

impl Load for Tasks {
    fn name(&self) -> &str {
        self.sc.name
    }

    fn steps(&self) -> usize {
        self.sc.steps
    }

    async fn one(&self) -> anyhow::Result<Duration> {
        self.stack.one(&self.sc).await
    }

    async fn histograms(&self) -> Histograms {
        self.stack.histograms().await
    }
}

struct Scenario {
    name: &'static str,
    worker: &'static str,
    namespace: String,
    template: &'static str,
    context: Value,
    steps: usize,
}

/// One load level's figures.
#[derive(Debug, Clone, serde::Serialize)]
struct Level {
    /// Clients (closed loop) or `None` (open loop).
    concurrency: Option<usize>,
    /// Tasks per second offered (open loop).
    offered_tasks_per_s: Option<f64>,
    fraction: Option<f64>,
    tasks: usize,
    errors: usize,
    tasks_per_s: f64,
    steps_per_s: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
}

impl Level {
    fn new(mut latencies: Vec<Duration>, errors: usize, elapsed: Duration, steps: usize) -> Level {
        latencies.sort();
        let tasks = latencies.len();
        let tasks_per_s = tasks as f64 / elapsed.as_secs_f64();
        Level {
            concurrency: None,
            offered_tasks_per_s: None,
            fraction: None,
            tasks,
            errors,
            tasks_per_s,
            steps_per_s: tasks_per_s * steps as f64,
            p50_ms: percentile(&latencies, 0.50),
            p95_ms: percentile(&latencies, 0.95),
            p99_ms: percentile(&latencies, 0.99),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Timing of a load run: a warm-up (not counted), then the measured window.
#[derive(Clone, Copy)]
struct Window {
    warmup: Duration,
    measure: Duration,
}

/// `concurrency` clients, each creating a task and waiting for it, in a loop. The tasks that
/// finish inside the measured window count (whenever they started, so a level whose latency is
/// close to the window is not undercounted).
async fn closed_loop<L: Load>(load: &Arc<L>, concurrency: usize, w: Window) -> Level {
    let start = Instant::now();
    let (from, to) = (start + w.warmup, start + w.warmup + w.measure);
    let mut clients = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let load = load.clone();
        clients.push(tokio::spawn(async move {
            let (mut lat, mut errors) = (Vec::new(), 0usize);
            loop {
                let began = Instant::now();
                if began >= to {
                    break;
                }
                match load.one().await {
                    Ok(d) if (from..=to).contains(&(began + d)) => lat.push(d),
                    Ok(_) => {}
                    Err(e) => {
                        errors += 1;
                        if errors == 1 {
                            eprintln!("{}: {e:#}", load.name());
                        }
                    }
                }
            }
            (lat, errors)
        }));
    }
    let (mut lat, mut errors) = (Vec::new(), 0);
    for c in clients {
        if let Ok((l, e)) = c.await {
            lat.extend(l);
            errors += e;
        }
    }
    let mut level = Level::new(lat, errors, w.measure, load.steps());
    level.concurrency = Some(concurrency);
    level
}

/// Tasks offered at a steady `rate` per second regardless of how fast they finish (each in a
/// tokio task of its own), for the measured window.
async fn open_loop<L: Load>(load: &Arc<L>, rate: f64, w: Window) -> Level {
    let interval = Duration::from_secs_f64(1.0 / rate.max(0.1));
    let start = Instant::now();
    let (from, to) = (start + w.warmup, start + w.warmup + w.measure);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut running = Vec::new();
    loop {
        let now = tick.tick().await.into_std();
        if now >= to {
            break;
        }
        let load = load.clone();
        running.push(tokio::spawn(async move {
            // Offered during the warm-up too; counted after it.
            let r = load.one().await;
            (now >= from).then_some(r)
        }));
    }
    let (mut lat, mut errors) = (Vec::new(), 0);
    for r in running {
        match r.await {
            Ok(Some(Ok(d))) => lat.push(d),
            Ok(None) => {}
            _ => errors += 1,
        }
    }
    let mut level = Level::new(lat, errors, w.measure, load.steps());
    level.tasks_per_s = level.tasks as f64 / w.measure.as_secs_f64();
    level.steps_per_s = level.tasks_per_s * load.steps() as f64;
    level.offered_tasks_per_s = Some(rate);
    level
}

/// A load's figures: every closed-loop level, the best of them, the open-loop levels at
/// fractions of it, and the batch sizes formed during the best.
struct Levels {
    closed: Vec<Level>,
    open: Vec<Level>,
    saturation: Option<Level>,
    batches: Value,
}

impl Levels {
    /// p50 at concurrency 1.
    fn idle_p50(&self) -> Option<f64> {
        self.closed
            .iter()
            .find(|l| l.concurrency == Some(1))
            .map(|l| l.p50_ms)
    }
}

/// Drives `load` closed-loop at each concurrency of `levels`, then open-loop at each fraction of
/// the saturated rate (and at the fixed rates of `TASKER_THROUGHPUT_RATES`, printed only).
async fn load_levels<L: Load>(
    load: &Arc<L>,
    levels: &[usize],
    fractions: &[f64],
    w: Window,
) -> Levels {
    let name = load.name().to_owned();
    let mut closed: Vec<Level> = Vec::new();
    let mut batches = Value::Null;
    for &c in levels {
        let before = load.histograms().await;
        let l = closed_loop(load, c, w).await;
        print_level(&format!("{name}  c={c}"), &l);
        if closed.iter().all(|b| b.tasks_per_s < l.tasks_per_s) {
            batches = load.histograms().await.since(&before);
        }
        closed.push(l);
    }
    let saturation = closed
        .iter()
        .max_by(|a, b| a.tasks_per_s.total_cmp(&b.tasks_per_s))
        .cloned();
    // Fixed offered rates, to compare builds at the same load.
    for rate in env_list("TASKER_THROUGHPUT_RATES", "") {
        let l = open_loop(load, rate as f64, w).await;
        print_level(&format!("{name}  {rate} tasks/s offered"), &l);
    }
    let mut open = Vec::new();
    if let Some(sat) = &saturation {
        for &f in fractions {
            let mut l = open_loop(load, sat.tasks_per_s * f, w).await;
            l.fraction = Some(f);
            print_level(&format!("{name}  {:.0}% of saturation", f * 100.0), &l);
            open.push(l);
        }
    }
    Levels {
        closed,
        open,
        saturation,
        batches,
    }
}

// ---------------------------------------------------------------------------------------------
// Batch sizes

/// Cumulative `_batch_size` histograms by (source, metric): bucket upper bounds → counts, sum.
#[derive(Default, Clone)]
struct Histograms(BTreeMap<(String, String), Histogram>);

#[derive(Default, Clone, Debug)]
struct Histogram {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

impl Histograms {
    fn parse(&mut self, source: &str, text: &str) {
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((key, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = key.split_once('{').unwrap_or((key, ""));
            let (base, part) = if let Some(b) = name.strip_suffix("_bucket") {
                (b, "bucket")
            } else if let Some(b) = name.strip_suffix("_sum") {
                (b, "sum")
            } else if let Some(b) = name.strip_suffix("_count") {
                (b, "count")
            } else {
                continue;
            };
            if !base.ends_with("_batch_size") {
                continue;
            }
            let h = self
                .0
                .entry((source.to_owned(), base.to_owned()))
                .or_default();
            match part {
                "bucket" => {
                    let le = labels
                        .split("le=\"")
                        .nth(1)
                        .and_then(|s| s.split('"').next())
                        .unwrap_or("+Inf");
                    let le = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().unwrap_or(f64::INFINITY)
                    };
                    h.buckets.push((le, value));
                }
                "sum" => h.sum = value,
                _ => h.count = value,
            }
        }
    }

    /// What was observed between `before` and `self`: per histogram, count, mean and the
    /// bucket bounds under which 50% and 95% of the observations fall.
    fn since(&self, before: &Histograms) -> Value {
        let mut out = serde_json::Map::new();
        for ((source, name), h) in &self.0 {
            let b = before.0.get(&(source.clone(), name.clone()));
            let count = h.count - b.map_or(0.0, |b| b.count);
            if count <= 0.0 {
                continue;
            }
            let sum = h.sum - b.map_or(0.0, |b| b.sum);
            let bucket = |q: f64| -> Value {
                for (le, c) in &h.buckets {
                    let prev = b
                        .and_then(|b| b.buckets.iter().find(|(l, _)| l == le))
                        .map_or(0.0, |(_, c)| *c);
                    if c - prev >= q * count {
                        return if le.is_finite() {
                            json!(le)
                        } else {
                            json!("+Inf")
                        };
                    }
                }
                Value::Null
            };
            out.insert(
                format!("{source}: {name}"),
                json!({"count": count, "mean": sum / count, "p50_le": bucket(0.5), "p95_le": bucket(0.95)}),
            );
        }
        Value::Object(out)
    }
}

// ---------------------------------------------------------------------------------------------
// The floor

/// Steps in a floor chain.
const FLOOR_STEPS: usize = 4;

/// The same hops as a 4-step chain — per step a durable commit, a confirmed publish, a consume,
/// a confirmed publish back, a consume, a durable commit — with every commit and confirm round
/// batched over whatever has arrived: the most this machine allows for them. Started once, its
/// hops serve every load level; [`Load::one`] runs one chain.
struct Floor {
    pool: PgPool,
    broker: Broker,
    publisher: tasker_broker::Publisher,
    out_queue: String,
    /// Chains started and not finished yet, by id.
    waiting: Arc<Mutex<HashMap<Uuid, oneshot::Sender<()>>>>,
    cancel: tokio_util::sync::CancellationToken,
    hops: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Floor {
    async fn start(env: &TestEnv) -> anyhow::Result<Floor> {
        let pool = PgPool::connect(&env.config.database_url).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS bench_floor (id uuid PRIMARY KEY, step int NOT NULL)",
        )
        .execute(&pool)
        .await?;
        let prefix = format!("{}.floor", env.config.queue_prefix);
        let broker = Broker::connect(&env.config.amqp_url, &prefix, "bench-floor").await?;
        broker.declare(&["out".to_owned()]).await?;
        let out_queue = topology::steps_queue(&prefix, "out");
        let back_queue = topology::results_queue(&prefix);
        let cancel = tokio_util::sync::CancellationToken::new();

        // The "worker": consume steps in batches, send each back in one confirm round, ack.
        let worker = {
            let back_queue = back_queue.clone();
            relay(
                broker.consume(&out_queue, "floor-worker", 512).await?,
                broker.publisher().await?,
                cancel.clone(),
                move |ids| {
                    let out = ids
                        .into_iter()
                        .map(|id| Outgoing {
                            queue: back_queue.clone(),
                            payload: id.as_bytes().to_vec(),
                        })
                        .collect();
                    async move { Some(out) }
                },
            )
        };

        // The "orchestrator": consume results in batches, commit them in one transaction (one
        // row update per step), publish the next steps in one confirm round, ack; a chain is
        // done after FLOOR_STEPS steps.
        let waiting: Arc<Mutex<HashMap<Uuid, oneshot::Sender<()>>>> = Arc::default();
        let orchestrator = {
            let (pool, out_queue, waiting) = (pool.clone(), out_queue.clone(), waiting.clone());
            relay(
                broker
                    .consume(&back_queue, "floor-orchestrator", 512)
                    .await?,
                broker.publisher().await?,
                cancel.clone(),
                move |ids| {
                    let (pool, out_queue, waiting) =
                        (pool.clone(), out_queue.clone(), waiting.clone());
                    async move {
                        let steps: Vec<(Uuid, i32)> = sqlx::query_as(
                            "UPDATE bench_floor SET step = step + 1 WHERE id = ANY($1) RETURNING id, step",
                        )
                        .bind(&ids)
                        .fetch_all(&pool)
                        .await
                        .ok()?;
                        let mut next = Vec::new();
                        for (id, step) in steps {
                            if step < FLOOR_STEPS as i32 {
                                next.push(Outgoing {
                                    queue: out_queue.clone(),
                                    payload: id.as_bytes().to_vec(),
                                });
                            } else if let Some(tx) = waiting.lock().unwrap().remove(&id) {
                                let _ = tx.send(());
                            }
                        }
                        Some(next)
                    }
                },
            )
        };
        Ok(Floor {
            publisher: broker.publisher().await?,
            pool,
            broker,
            out_queue,
            waiting,
            cancel,
            hops: Mutex::new(vec![worker, orchestrator]),
        })
    }

    async fn stop(&self) {
        self.cancel.cancel();
        let hops = std::mem::take(&mut *self.hops.lock().unwrap());
        for hop in hops {
            let _ = hop.await;
        }
        self.broker.close().await;
    }
}

impl Load for Floor {
    fn name(&self) -> &str {
        "floor_4_steps"
    }

    fn steps(&self) -> usize {
        FLOOR_STEPS
    }

    /// Starts a chain (commit + publish its first step) and waits for its end.
    async fn one(&self) -> anyhow::Result<Duration> {
        let began = Instant::now();
        let id = Uuid::now_v7();
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id, tx);
        let chain = async {
            sqlx::query("INSERT INTO bench_floor VALUES ($1, 0)")
                .bind(id)
                .execute(&self.pool)
                .await?;
            self.publisher
                .publish_all(&[Outgoing {
                    queue: self.out_queue.clone(),
                    payload: id.as_bytes().to_vec(),
                }])
                .await?;
            tokio::time::timeout(Duration::from_secs(60), rx).await??;
            anyhow::Ok(began.elapsed())
        };
        let result = chain.await;
        if result.is_err() {
            self.waiting.lock().unwrap().remove(&id);
        }
        result
    }
}

/// One hop of the floor until cancelled: take what has arrived (up to 256 messages, each a
/// chain id), let `step` turn the ids into the next messages (`None` stops the hop), publish
/// them in one confirm round, then ack.
fn relay<F, Fut>(
    mut rx: tasker_broker::Subscription,
    publisher: tasker_broker::Publisher,
    cancel: tokio_util::sync::CancellationToken,
    mut step: F,
) -> tokio::task::JoinHandle<()>
where
    F: FnMut(Vec<Uuid>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<Vec<Outgoing>>> + Send,
{
    tokio::spawn(async move {
        loop {
            let batch = tokio::select! {
                () = cancel.cancelled() => return,
                b = next_batch(&mut rx, 256) => b,
            };
            let Some(batch) = batch else { return };
            let deliveries: Vec<_> = batch.into_iter().filter_map(Result::ok).collect();
            let ids = deliveries
                .iter()
                .filter_map(|d| Uuid::from_slice(&d.data).ok())
                .collect();
            let Some(out) = step(ids).await else { return };
            if publisher.publish_all(&out).await.is_err() {
                return;
            }
            for d in deliveries {
                let _ = d.ack(BasicAckOptions::default()).await;
            }
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Scale: one 100,000-step fan-out

async fn fan_out(stack: &Stack, batches: u64) -> anyhow::Result<Value> {
    let sample = |p: &Process| p.memory().map(|(rss, _)| rss).unwrap_or(0);
    let (before_o, before_w) = (
        sample(&stack.orchestrator),
        sample(&stack.workers["rust"].0),
    );
    let started = Instant::now();
    let task = stack
        .client
        .create_task(
            &CreateTask::new("rust_examples", "batch_numbers")
                .context(json!({"count": batches, "batch_size": 1})),
        )
        .await?;
    let (mut peak_o, mut peak_w) = (before_o, before_w);
    let wait = stack.done.wait(task.id, Duration::from_secs(600));
    tokio::pin!(wait);
    let mut every = tokio::time::interval(Duration::from_millis(50));
    let state = loop {
        tokio::select! {
            s = &mut wait => break s?,
            _ = every.tick() => {
                peak_o = peak_o.max(sample(&stack.orchestrator));
                peak_w = peak_w.max(sample(&stack.workers["rust"].0));
            }
        }
    };
    let elapsed = started.elapsed();
    anyhow::ensure!(state == "complete", "the fan-out ended {state}");
    let total = stack.client.task(task.id, None).await?;
    let expected: u64 = (0..batches).sum();
    let result = total.result.as_ref().map(|r| r.to_string());
    Ok(json!({
        "steps": batches + 2,
        "seconds": elapsed.as_secs_f64(),
        "steps_per_s": (batches + 2) as f64 / elapsed.as_secs_f64(),
        "orchestrator_rss_before_mib": mib(before_o),
        "orchestrator_peak_rss_mib": mib(peak_o),
        "worker_rss_before_mib": mib(before_w),
        "worker_peak_rss_mib": mib(peak_w),
        "expected_sum": expected,
        "result": result,
    }))
}

// ---------------------------------------------------------------------------------------------
// The polyglot pipeline: events through TypeScript → Rust → Python → Ruby → TypeScript

/// The seed project's figures for this pipeline (TypeScript → Rust → Python → Go → TypeScript,
/// 100,000 events, not durable), for reference only: measured elsewhere, on other hardware.
const SEED_FIGURES: &str = "seed: 25,000 events/s one event per call, 77,000 events/s batched \
    50-100 events; C++ monolith 44,000 events/s";

/// CPU seconds (user + system) used so far by each user process on the machine (kernel threads
/// left out), by pid with its command name (`postgres`, `beam.smp`, `tasker-orchestr`, `node`,
/// …): the difference of two readings says where a run's CPU went.
fn cpu_by_process() -> BTreeMap<u32, (String, f64)> {
    // Clock ticks per second: 100 on Linux (USER_HZ).
    const TICKS: f64 = 100.0;
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // A kernel thread has no command line.
        if std::fs::read(entry.path().join("cmdline")).map_or(true, |c| c.is_empty()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so split at its closing parenthesis.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the comm: state is field 0, utime 11, stime 12.
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        out.insert(
            pid,
            (
                stat[open + 1..close].to_owned(),
                (ticks(11) + ticks(12)) / TICKS,
            ),
        );
    }
    out
}

/// The CPU seconds each command used between two [`cpu_by_process`] readings (a process that
/// started meanwhile counts whole; one that ended is missed), those under 10 ms left out.
fn cpu_used(before: &BTreeMap<u32, (String, f64)>, after: &BTreeMap<u32, (String, f64)>) -> Value {
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for (pid, (comm, cpu)) in after {
        let was = before
            .get(pid)
            .filter(|(c, _)| c == comm)
            .map_or(0.0, |(_, v)| *v);
        *used.entry(comm.clone()).or_default() += cpu - was;
    }
    Value::Object(
        used.into_iter()
            .filter(|(_, d)| *d >= 0.01)
            .map(|(k, v)| (k, json!(v)))
            .collect(),
    )
}

/// Runs `events` events through `polyglot/pipeline`, one task per batch of `batch` events with
/// at most `in_flight` tasks at once; checks the aggregates against the oracle and reports
/// events/s end to end and each stage's time.
async fn pipeline(
    stack: &Arc<Stack>,
    pool: &PgPool,
    events: u32,
    batch: u32,
    in_flight: usize,
) -> anyhow::Result<Value> {
    let tasks = events.div_ceil(batch);
    let slots = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let cpu_before = cpu_by_process();
    let started = Instant::now();
    let mut runs = Vec::with_capacity(tasks as usize);
    for b in 0..tasks {
        let permit = slots.clone().acquire_owned().await?;
        let stack = stack.clone();
        let first = b * batch;
        let count = batch.min(events - first);
        runs.push(tokio::spawn(async move {
            let task =
                stack
                    .client
                    .create_task(&CreateTask::new("polyglot", "pipeline").context(
                        json!({"seed": 42, "users": 10_000, "first": first, "count": count}),
                    ))
                    .await?;
            let state = stack.done.wait(task.id, Duration::from_secs(600)).await?;
            drop(permit);
            anyhow::ensure!(
                state == "complete",
                "pipeline task {} ended {state}",
                task.id
            );
            anyhow::Ok(task.id)
        }));
    }
    let mut ids = Vec::with_capacity(runs.len());
    for r in runs {
        ids.push(r.await??);
    }
    let elapsed = started.elapsed();
    let cpu = cpu_used(&cpu_before, &cpu_by_process());
    let sinks: Vec<Value> =
        sqlx::query_scalar("SELECT result FROM steps WHERE task_id = ANY($1) AND name = 'sink'")
            .bind(&ids)
            .fetch_all(pool)
            .await?;
    let mut rows = tasker::pipeline::Rows::new();
    for sink in &sinks {
        tasker::pipeline::merge(sink, &mut rows)?;
    }
    let equal = rows == tasker::pipeline::oracle(42, 10_000, 0, events);
    let stages: Vec<(String, i64, f64, f64)> = sqlx::query_as(
        "SELECT name, count(*),
                sum(extract(epoch FROM finished_at - started_at))::float8,
                sum(extract(epoch FROM started_at - dispatched_at))::float8
         FROM steps WHERE task_id = ANY($1) GROUP BY name",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let order = ["ingest", "parse", "rules", "aggregate", "sink"];
    let mut per_stage = serde_json::Map::new();
    for name in order {
        if let Some((_, n, run, queue)) = stages.iter().find(|s| s.0 == name) {
            per_stage.insert(
                name.into(),
                json!({"steps": n, "worker_s": run, "queued_s": queue,
                       "worker_ms_per_step": run * 1000.0 / *n as f64}),
            );
        }
    }
    Ok(json!({
        "events": events, "batch": batch, "tasks": tasks, "seconds": elapsed.as_secs_f64(),
        "events_per_s": f64::from(events) / elapsed.as_secs_f64(),
        "equal_to_oracle": equal, "stages": per_stage, "cpu_seconds": cpu,
        "cpu_available_seconds": elapsed.as_secs_f64()
            * std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
    }))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------------------------
// The peer

/// Runs the Celery chain peer if `TASKER_CELERY_PYTHON` names a Python with Celery.
async fn celery(env: &TestEnv, concurrency: &[usize], seconds: u64) -> Value {
    let Ok(python) = std::env::var("TASKER_CELERY_PYTHON") else {
        return json!({"skipped": "TASKER_CELERY_PYTHON is not set (cargo make bench-throughput sets it)"});
    };
    let out = target_dir().join("throughput/celery.json");
    let list: Vec<String> = concurrency.iter().map(ToString::to_string).collect();
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let status = Command::new(python)
        .arg(repo_root().join("benches/peers/celery_chain.py"))
        .arg("--amqp-url")
        .arg(&env.config.amqp_url)
        .arg("--concurrency")
        .arg(list.join(","))
        .arg("--duration")
        .arg(seconds.to_string())
        .arg("--out")
        .arg(&out)
        .status()
        .await;
    match status {
        Ok(s) if s.success() => std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({"skipped": "the peer wrote no figures"})),
        Ok(s) => json!({"skipped": format!("the peer failed ({s})")}),
        Err(e) => json!({"skipped": format!("the peer could not start: {e}")}),
    }
}

// ---------------------------------------------------------------------------------------------

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn print_level(label: &str, l: &Level) {
    println!(
        "{:<34} {:>7} {:>9.1} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>6}",
        label, l.tasks, l.tasks_per_s, l.steps_per_s, l.p50_ms, l.p95_ms, l.p99_ms, l.errors
    );
}

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let filter = std::env::var("TASKER_BENCH_FILTER").unwrap_or_default();
    // Several parts: `TASKER_BENCH_FILTER=floor,linear_rust,fanout_100k,celery`.
    let wanted = |name: &str| {
        filter.is_empty()
            || filter
                .split(',')
                .any(|f| !f.is_empty() && name.contains(f.trim()))
    };
    let seconds: u64 = std::env::var("TASKER_THROUGHPUT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let w = Window {
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(seconds),
    };
    let levels = env_list("TASKER_THROUGHPUT_CONCURRENCY", "1,8,32,64,128");
    let fractions = [0.25, 0.5, 0.75];
    let fan_out_steps: u64 = std::env::var("TASKER_FANOUT_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);

    let mut stack = Stack::start().await?;
    let mut notes = Vec::new();
    let mut summary_fair = None;
    let scenarios = vec![
        scenario("linear_rust", "rust", "linear", json!({"value": 6}), 4),
        scenario("diamond_rust", "rust", "diamond", json!({"value": 3}), 4),
        scenario(
            "fanout_100_rust",
            "rust",
            "batch_numbers",
            json!({"count": 100, "batch_size": 1}),
            102,
        ),
        scenario("linear_python", "python", "linear", json!({"value": 6}), 4),
    ];
    let python = scenarios
        .iter()
        .any(|s| s.worker == "python" && wanted(s.name))
        || wanted("pipeline");
    if python && let Err(e) = stack.worker("python").await {
        notes.push(format!("python worker: skipped ({e:#})"));
    }
    // The pipeline's other languages (its Rust stage runs on the Rust worker).
    if wanted("pipeline") {
        for language in ["ruby", "typescript"] {
            if let Err(e) = stack.worker(language).await {
                notes.push(format!("{language} worker: skipped ({e:#})"));
            }
        }
    }
    // Fair sharing restarts the Rust worker with other settings (and back): before the stack is
    // shared.
    if wanted("fair") {
        summary_fair = Some(fair::run(&mut stack).await);
    }
    // Kills and restarts the orchestrator: before the stack is shared too.
    let summary_operations = if wanted("operations") {
        Some(operations::run(&mut stack).await)
    } else {
        None
    };
    let stack = Arc::new(stack);
    println!(
        "{:<34} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9} {:>6}",
        "scenario / load", "tasks", "tasks/s", "steps/s", "p50 ms", "p95 ms", "p99 ms", "errors"
    );
    let mut summary = serde_json::Map::new();

    if wanted("floor") {
        let floor = Arc::new(Floor::start(&stack.env).await?);
        let figures = load_levels(&floor, &levels, &fractions, w).await;
        floor.stop().await;
        summary.insert(
            "floor_4_steps".into(),
            json!({
                "idle_p50_ms": figures.idle_p50(), "closed_loop": figures.closed,
                "open_loop": figures.open, "saturation": figures.saturation,
            }),
        );
    }

    // Kept for a level at the Celery chain's own load, once the peer has run.
    let mut linear_rust: Option<Arc<Tasks>> = None;
    for sc in scenarios {
        if !wanted(sc.name) {
            continue;
        }
        if !stack.workers.contains_key(sc.worker) {
            continue;
        }
        let (name, worker, steps) = (sc.name, sc.worker, sc.steps);
        let tasks = Arc::new(Tasks {
            stack: stack.clone(),
            sc,
        });
        // Warm the path (connections, statement caches) before measuring.
        for _ in 0..10 {
            tasks.one().await?;
        }
        let figures = load_levels(&tasks, &levels, &fractions, w).await;
        summary.insert(
            name.into(),
            json!({
                "worker": worker, "steps_per_task": steps,
                "idle_p50_ms": figures.idle_p50(), "closed_loop": figures.closed,
                "open_loop": figures.open, "saturation": figures.saturation,
                "batch_sizes_at_saturation": figures.batches,
            }),
        );
        if name == "linear_rust" {
            linear_rust = Some(tasks);
        }
    }

    if wanted("fanout_100k") {
        match fan_out(&stack, fan_out_steps).await {
            Ok(v) => {
                println!("fan-out of {fan_out_steps}: {v}");
                summary.insert("fanout_100k".into(), v);
            }
            Err(e) => {
                println!("fan-out of {fan_out_steps}: FAILED {e:#}");
                summary.insert("fanout_100k".into(), json!({"failed": format!("{e:#}")}));
            }
        }
    }

    if wanted("pipeline") {
        let events = env_list("TASKER_PIPELINE_EVENTS", "100000")[0] as u32;
        let batches = env_list("TASKER_PIPELINE_BATCHES", "1,10,100,1000");
        // The oracle's own rate: the same events and aggregates in this one process.
        let t = Instant::now();
        let oracle = tasker::pipeline::oracle(42, 10_000, 0, events);
        let oracle_rate = f64::from(events) / t.elapsed().as_secs_f64();
        println!(
            "pipeline oracle: {events} events, {} rows, {oracle_rate:.0} events/s in process ({SEED_FIGURES})",
            oracle.len()
        );
        let pool = PgPool::connect(&stack.env.config.database_url).await?;
        let mut runs = Vec::new();
        for batch in batches {
            match pipeline(&stack, &pool, events, batch as u32, 256).await {
                Ok(v) => {
                    println!(
                        "pipeline batch {batch:>5}: {:>9.0} events/s, {:.2} s, equal to the oracle: {}, stages {}, cpu s {}",
                        v["events_per_s"].as_f64().unwrap_or(0.0),
                        v["seconds"].as_f64().unwrap_or(0.0),
                        v["equal_to_oracle"],
                        v["stages"],
                        v["cpu_seconds"]
                    );
                    runs.push(v);
                }
                Err(e) => {
                    println!("pipeline batch {batch}: FAILED {e:#}");
                    runs.push(json!({"batch": batch, "failed": format!("{e:#}")}));
                }
            }
        }
        pool.close().await;
        summary.insert(
            "pipeline".into(),
            json!({"events": events, "oracle_events_per_s": oracle_rate, "runs": runs,
                   "reference": SEED_FIGURES}),
        );
    }

    if wanted("scale") {
        summary.insert("scale".into(), scale::run(&stack).await);
    }
    if wanted("events") {
        summary.insert("events".into(), events::run(&stack).await);
    }

    if let Some(fair) = summary_fair {
        summary.insert("fair_sharing".into(), fair);
    }
    if let Some(operations) = summary_operations {
        summary.insert("operations".into(), operations);
    }

    if wanted("celery") {
        let peer = celery(&stack.env, &levels, seconds).await;
        println!("celery peer: {peer}");
        // Latency compared at one load: `linear_rust` offered the rate the peer was offered at
        // 50% of its own saturation.
        let peer_half = peer["open_loop"].as_array().and_then(|levels| {
            levels
                .iter()
                .find(|l| l["fraction"].as_f64() == Some(0.5))
                .and_then(|l| l["offered_tasks_per_s"].as_f64())
        });
        if let (Some(tasks), Some(rate)) = (&linear_rust, peer_half) {
            let l = open_loop(tasks, rate, w).await;
            print_level(
                &format!("linear_rust  {rate:.1} tasks/s (Celery's 50%)"),
                &l,
            );
            if let Some(Value::Object(s)) = summary.get_mut("linear_rust") {
                s.insert("at_peer_half_rate".into(), json!(l));
            }
        }
        summary.insert("celery_chain_4".into(), peer);
    }
    drop(linear_rust);

    write_bench_summary(
        "throughput",
        json!({"scenarios": summary, "seconds_per_level": seconds}),
        &notes,
    )?;
    let stack =
        Arc::try_unwrap(stack).map_err(|_| anyhow::anyhow!("load tasks still hold the stack"))?;
    stack.stop().await
}

fn scenario(
    name: &'static str,
    worker: &'static str,
    template: &'static str,
    context: Value,
    steps: usize,
) -> Scenario {
    Scenario {
        name,
        worker,
        namespace: format!("{worker}_examples"),
        template,
        context,
        steps,
    }
}
