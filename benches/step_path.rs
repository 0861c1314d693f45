//! What one step costs on the worker's side of the handler, in each language, without the
//! broker, the orchestrator or the core's threads: the Rust worker's host (`RustHost`, from
//! submit to the completion) and each binding's own runner (from the job's JSON text, as the core
//! hands it out, to the outcome message handed back), with the fixtures' `add_ten` handler and a
//! step message as the second step of `linear` receives it.
//!
//! Each path is sampled back to back and after pauses of 1, 4 and 70 ms. A linear task's steps
//! reach a worker ~4 ms apart (the orchestrator's commit and two broker hops lie between them),
//! so the 4 ms column is what each step of `linear_<lang>` in `e2e_latency` pays; code that sat
//! idle that long runs several times slower than back to back on a machine whose caches other
//! work (or other guests) has reused meanwhile. The last lines give the difference from Rust for
//! the four steps of a linear task.
//!
//! Run with `cargo bench --bench step_path` (no services needed). A binding that is not built
//! (`workers/<lang>/build.sh`) is skipped, saying why.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use tasker::repo_root;
use tasker_shared::StepMessage;
use tasker_worker::{CompletionSink, HandlerHost, Job, JobView, Report, RustHost};

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

/// The Rust worker's path: `RustHost` runs the job on a tokio task and reports it.
fn rust(message: &StepMessage) -> Figures {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let host = RustHost::new(tasker_worker_rust::registry(), 1);
    let (sink, mut reports) = CompletionSink::channel();
    rt.block_on(async {
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
                    match reports.recv().await.expect("the host reports") {
                        Report::Done(done) => break done,
                        _ => continue,
                    }
                };
                samples.push(start.elapsed().as_secs_f64() * 1e6);
                assert!(
                    matches!(done.outcome, tasker_shared::Outcome::Success { .. }),
                    "{:?}",
                    done.outcome
                );
            }
            let (p50, p95) = percentiles(samples);
            figures.push((pause, p50, p95));
        }
        figures
    })
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
    let mut rows = vec![("rust".to_owned(), rust(&message))];
    for lang in ["python", "ruby", "typescript"] {
        match binding(&root, lang, &job) {
            Ok(figures) => rows.push((lang.to_owned(), figures)),
            Err(why) => println!("{lang}: skipped: {why}"),
        }
    }
    println!("\none step, p50 / p95 in microseconds, by pause before it");
    print!("{:<12}", "");
    for pause in PAUSES {
        print!("{:>18}", format!("after {pause} ms"));
    }
    println!();
    for (lang, figures) in &rows {
        print!("{lang:<12}");
        for (_, p50, p95) in figures {
            print!("{:>18}", format!("{p50:.1} / {p95:.1}"));
        }
        println!();
    }
    println!("\nfour steps (a linear task) over Rust, p50, in milliseconds");
    let rust = &rows[0].1;
    for (lang, figures) in rows.iter().skip(1) {
        print!("{lang:<12}");
        for ((_, p50, _), (_, rust_p50, _)) in figures.iter().zip(rust) {
            print!("{:>18}", format!("{:+.2}", 4.0 * (p50 - rust_p50) / 1000.0));
        }
        println!();
    }
}
