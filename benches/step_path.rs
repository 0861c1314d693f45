//! What one step costs a worker besides the broker and the orchestrator, piece by piece:
//!
//! - `rust`: the Rust worker's host (`RustHost`), from submitting a job to its completion;
//! - `hand-off`: the embedded core's (`BatchHost`) hand-off to a language's thread and back,
//!   with no language: a plain thread waiting in `next_batch`, as the bindings' handler threads
//!   do, answers each job at once;
//! - `python`, `ruby`, `typescript`: the binding's own runner, from the job's JSON text as the core
//!   hands it out to the outcome message handed back (parse, context, handler, encoded outcome),
//!   in the language's interpreter (`benches/step_path/step_path.{py,rb,js}`).
//!
//! The step is the second step of `linear` (the fixtures' `add_ten`, one parent result). Each
//! path is sampled back to back and after pauses of 1, 4 and 70 ms. A linear task's steps reach a
//! worker ~4 ms apart (the orchestrator's commit and two broker hops lie between them), so the
//! 4 ms column is what each step of `linear_<lang>` in `e2e_latency` pays. The last lines add up
//! the hand-off and each runner over Rust for the four steps of a linear task: the part of the
//! FFI workers' overhead that is theirs and not the broker's.
//!
//! Run with `cargo bench --bench step_path` (no services needed). A binding that is not built
//! (`workers/<lang>/build.sh`) is skipped, saying why.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tasker::repo_root;
use tasker_shared::{Outcome, StepMessage};
use tasker_worker::{BatchHost, CompletionSink, HandlerHost, Job, JobView, Report, RustHost};
use tokio::runtime::Runtime;

/// Pauses before each sample, in milliseconds (0: back to back).
const PAUSES: [u64; 4] = [0, 1, 4, 70];

/// p50 and p95 in microseconds for each pause.
type Figures = Vec<(u64, f64, f64)>;

fn message() -> StepMessage {
    serde_json::from_value(json!({
        "task_id": "0190a0a0-0000-7000-8000-000000000001",
        "step_id": "0190a0a0-0000-7000-8000-000000000002",
        "namespace": "rust_examples",
        "task_name": "linear",
        "step_name": "add_ten",
        "handler": "add_ten",
        "attempt": 1,
        "max_attempts": 3,
        "context": {"value": 6},
        "parent_results": {"double": {"value": 12}},
        "dispatched_at": "2026-11-26T10:00:00Z",
        "timeout_ms": 30_000,
    }))
    .expect("a valid step message")
}

fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[samples.len() * 95 / 100],
    )
}

fn samples_for(pause: u64) -> usize {
    if pause == 0 { 2000 } else { 100 }
}

/// Samples one job after another through `host`, from its submission to its completion, on a
/// worker thread of the runtime (as the core's consumer submits them).
fn through(rt: &Runtime, host: Arc<dyn HandlerHost>, message: &StepMessage) -> Figures {
    let message = message.clone();
    let sampling = rt.spawn(async move {
        let (sink, mut reports) = CompletionSink::channel();
        let mut figures = Vec::new();
        let mut id = 0;
        for pause in PAUSES {
            let mut samples = Vec::new();
            for _ in 0..samples_for(pause) {
                tokio::time::sleep(Duration::from_millis(pause)).await;
                id += 1;
                let job = Job::new(id, message.clone());
                let start = Instant::now();
                host.submit(vec![job], &sink);
                let done = loop {
                    if let Report::Done(done) = reports.recv().await.expect("the host reports") {
                        break done;
                    }
                };
                samples.push(start.elapsed().as_secs_f64() * 1e6);
                assert!(
                    done.job == id && matches!(done.outcome, Outcome::Success { .. }),
                    "{done:?}"
                );
            }
            let (p50, p95) = percentiles(samples);
            figures.push((pause, p50, p95));
        }
        figures
    });
    rt.block_on(sampling).expect("sampling ran")
}

/// The core's hand-off to a language's thread and back, with no language: a plain thread
/// waiting in `next_batch`, as the bindings' handler threads do, answers each job at once.
fn hand_off(rt: &Runtime, message: &StepMessage) -> Figures {
    let host = Arc::new(BatchHost::new());
    let answering = {
        let host = host.clone();
        std::thread::spawn(move || {
            while !host.is_stopped() {
                for job in host.next_batch(1, Duration::from_secs(1)) {
                    let outcome =
                        json!([{"id": job.id, "status": "success", "result": {"value": 22}}]);
                    host.complete_json(&outcome.to_string())
                        .expect("an outcome");
                }
            }
        })
    };
    let figures = through(rt, host.clone(), message);
    host.stop();
    answering.join().expect("the answering thread");
    figures
}

/// A binding's runner, in its own interpreter (`benches/step_path/step_path.<ext>`).
fn binding(root: &Path, lang: &str, job: &str) -> Result<Figures, String> {
    let script = |ext: &str| root.join(format!("benches/step_path/step_path.{ext}"));
    let (program, script, built) = match lang {
        "python" => (
            root.join("workers/python/.venv/bin/python"),
            script("py"),
            root.join("workers/python/.venv/bin/python"),
        ),
        "ruby" => (
            "ruby".into(),
            script("rb"),
            root.join("workers/ruby/lib/tasker/tasker_rb.so"),
        ),
        _ => (
            "node".into(),
            script("js"),
            root.join("workers/typescript/dist/execute.js"),
        ),
    };
    if !built.exists() {
        return Err(format!(
            "not built ({} is missing: run workers/{lang}/build.sh)",
            built.display()
        ));
    }
    let out = Command::new(&program)
        .arg(&script)
        .arg(job)
        .args(PAUSES.map(|p| p.to_string()))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let figures: Option<Figures> = text
        .lines()
        .map(|line| {
            let f: Vec<f64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            Some((*f.first()? as u64, *f.get(1)?, *f.get(2)?))
        })
        .collect();
    figures
        .filter(|f| f.len() == PAUSES.len())
        .ok_or_else(|| format!("{} printed something else: {text}", script.display()))
}

fn main() {
    let root = repo_root();
    let message = message();
    let job = serde_json::to_string(&JobView {
        id: 1,
        step: message.clone(),
    })
    .expect("a job serializes");
    // As the worker's and the embedded core's runtimes are built.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let rust_host = Arc::new(RustHost::new(tasker_worker_rust::registry(), 1));
    let rust = through(&rt, rust_host, &message);
    let handed = hand_off(&rt, &message);
    let mut runners = Vec::new();
    for lang in ["python", "ruby", "typescript"] {
        match binding(&root, lang, &job) {
            Ok(figures) => runners.push((lang, figures)),
            Err(why) => println!("{lang}: skipped: {why}"),
        }
    }

    println!("\none step, p50 / p95 in microseconds, by pause before it");
    row("", PAUSES.map(|p| format!("after {p} ms")));
    row(
        "rust",
        rust.iter()
            .map(|(_, p50, p95)| format!("{p50:.1} / {p95:.1}")),
    );
    row(
        "hand-off",
        handed
            .iter()
            .map(|(_, p50, p95)| format!("{p50:.1} / {p95:.1}")),
    );
    for (lang, figures) in &runners {
        row(
            lang,
            figures
                .iter()
                .map(|(_, p50, p95)| format!("{p50:.1} / {p95:.1}")),
        );
    }

    // Per linear task: four steps' p50 over Rust's, in milliseconds.
    let over = |figures: &Figures| -> Vec<f64> {
        figures
            .iter()
            .zip(&rust)
            .map(|((_, p50, _), (_, rust_p50, _))| 4.0 * (p50 - rust_p50) / 1000.0)
            .collect()
    };
    let ms = |v: &[f64]| v.iter().map(|d| format!("{d:+.2}")).collect::<Vec<_>>();
    let hand_off_ms = over(&handed);
    println!("\nfour steps (a linear task) over Rust, p50, in milliseconds");
    row("hand-off", ms(&hand_off_ms));
    for (lang, figures) in &runners {
        row(&format!("{lang} runner"), ms(&over(figures)));
    }
    for (lang, figures) in &runners {
        let sum: Vec<f64> = over(figures)
            .iter()
            .zip(&hand_off_ms)
            .map(|(a, b)| a + b)
            .collect();
        row(&format!("{lang}, both"), ms(&sum));
    }
}

fn row(label: &str, cells: impl IntoIterator<Item = String>) {
    print!("{label:<18}");
    for cell in cells {
        print!("{cell:>18}");
    }
    println!();
}
