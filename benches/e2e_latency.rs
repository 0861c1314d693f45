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
//!
//! The stack under test (orchestrators, workers, worker processes) is in `e2e_latency/stack.rs`,
//! the floor in `e2e_latency/floor.rs`, the per-hop breakdown in `e2e_latency/breakdown.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, SamplingMode};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use uuid::Uuid;

use tasker::{repo_root, write_bench_summary};

#[path = "e2e_latency/breakdown.rs"]
mod breakdown;
#[path = "e2e_latency/floor.rs"]
mod floor;
#[path = "e2e_latency/stack.rs"]
mod stack;

use breakdown::hops;
use floor::Floor;
use stack::Stack;

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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
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
