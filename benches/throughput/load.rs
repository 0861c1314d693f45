//! Load: closed loop (C clients, each a task at a time) and open loop (a steady rate), each
//! level's throughput and latency percentiles.

use super::*;

/// What the load generators drive: one task (or one floor chain) from its start to its end.
pub(crate) trait Load: Send + Sync + 'static {
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
pub(crate) struct Tasks {
    pub(crate) stack: Arc<Stack>,
    pub(crate) sc: Scenario,
}

impl Tasks {
    /// The `linear` chain on the Rust worker (`{"value": 6}`), the load most scenarios run beside.
    pub(crate) fn linear_rust(stack: &Arc<Stack>) -> Arc<Tasks> {
        Arc::new(Tasks {
            stack: stack.clone(),
            sc: scenario("linear_rust", "rust", "linear", json!({"value": 6}), 4),
        })
    }
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

pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) worker: &'static str,
    pub(crate) namespace: String,
    pub(crate) template: &'static str,
    pub(crate) context: Value,
    pub(crate) steps: usize,
}

/// One load level's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Level {
    /// Clients (closed loop) or `None` (open loop).
    pub(crate) concurrency: Option<usize>,
    /// Tasks per second offered (open loop).
    pub(crate) offered_tasks_per_s: Option<f64>,
    pub(crate) fraction: Option<f64>,
    pub(crate) tasks: usize,
    pub(crate) errors: usize,
    pub(crate) tasks_per_s: f64,
    pub(crate) steps_per_s: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) p99_ms: f64,
}

impl Level {
    pub(crate) fn new(
        mut latencies: Vec<Duration>,
        errors: usize,
        elapsed: Duration,
        steps: usize,
    ) -> Level {
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

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Timing of a load run: a warm-up (not counted), then the measured window.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
}

/// `concurrency` clients, each creating a task and waiting for it, in a loop. The tasks that
/// finish inside the measured window count (whenever they started, so a level whose latency is
/// close to the window is not undercounted).
pub(crate) async fn closed_loop<L: Load>(load: &Arc<L>, concurrency: usize, w: Window) -> Level {
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
pub(crate) async fn open_loop<L: Load>(load: &Arc<L>, rate: f64, w: Window) -> Level {
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
pub(crate) struct Levels {
    pub(crate) closed: Vec<Level>,
    pub(crate) open: Vec<Level>,
    pub(crate) saturation: Option<Level>,
    pub(crate) batches: Value,
    /// CPU seconds per 1,000 steps of each process (by command) during the saturated level.
    pub(crate) cpu_per_1000_steps: Value,
}

impl Levels {
    /// p50 at concurrency 1.
    pub(crate) fn idle_p50(&self) -> Option<f64> {
        self.closed
            .iter()
            .find(|l| l.concurrency == Some(1))
            .map(|l| l.p50_ms)
    }
}

/// Drives `load` closed-loop at each concurrency of `levels`, then open-loop at each fraction of
/// the saturated rate (and at the fixed rates of `TASKER_THROUGHPUT_RATES`, printed only).
pub(crate) async fn load_levels<L: Load>(
    load: &Arc<L>,
    levels: &[usize],
    fractions: &[f64],
    w: Window,
) -> Levels {
    let name = load.name().to_owned();
    let mut closed: Vec<Level> = Vec::new();
    let mut batches = Value::Null;
    let mut cpu = Value::Null;
    for &c in levels {
        let before = load.histograms().await;
        let cpu_before = super::cpu_by_process();
        let l = closed_loop(load, c, w).await;
        print_level(&format!("{name}  c={c}"), &l);
        if closed.iter().all(|b| b.tasks_per_s < l.tasks_per_s) {
            batches = load.histograms().await.since(&before);
            cpu = per_1000_steps(
                super::cpu_used(&cpu_before, &super::cpu_by_process()),
                &l,
                load.steps(),
                w,
            );
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
        cpu_per_1000_steps: cpu,
    }
}

/// CPU seconds by process over a level's warm-up and window, as seconds per 1,000 of the steps
/// it completed in its window (the CPU scaled to the window: a closed loop runs alike in both).
fn per_1000_steps(used: Value, level: &Level, steps_per_task: usize, w: Window) -> Value {
    let steps = (level.tasks * steps_per_task) as f64;
    let window = w.measure.as_secs_f64() / (w.warmup + w.measure).as_secs_f64();
    let Value::Object(used) = used else {
        return Value::Null;
    };
    Value::Object(
        used.into_iter()
            .filter_map(|(k, v)| Some((k, json!(v.as_f64()? * window / steps.max(1.0) * 1000.0))))
            .collect(),
    )
}
