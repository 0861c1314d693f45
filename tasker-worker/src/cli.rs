//! The worker program for Rust handlers: `tasker_worker::run(registry)` is a whole `main`. It
//! takes the flags every language's worker takes, registers the templates, serves `/health` and
//! `/metrics`, runs until SIGTERM or Ctrl-C, then stops gracefully (running handlers finish and
//! their results are published within `--shutdown-timeout`).
//!
//! ```no_run
//! use tasker_worker::{HandlerError, Registry, StepContext};
//!
//! async fn hello(ctx: StepContext) -> Result<serde_json::Value, HandlerError> {
//!     Ok(serde_json::json!({ "greeting": format!("Hello, {}", ctx.context["name"]) }))
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = Registry::new();
//!     registry.register("hello", hello);
//!     tasker_worker::run(registry)
//! }
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::handler::Registry;
use crate::host::RustHost;
use crate::setup::{Overrides, Setup};
use crate::worker::Worker;

/// A Tasker worker running Rust step handlers.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// TOML configuration file (see config/tasker.reference.toml).
    #[arg(long, env = "TASKER_CONFIG")]
    config: Option<PathBuf>,
    /// Folder of task templates; the worker consumes their namespaces and registers them with
    /// the orchestrator.
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Port of /health and /metrics (default 8100; if another process holds it, a free one is
    /// taken and logged; 0 picks a free port); the address is worker.health_bind (127.0.0.1 by
    /// default).
    #[arg(long)]
    health_port: Option<u16>,
    /// Steps run at the same time.
    #[arg(long)]
    concurrency: Option<usize>,
    /// Orchestrator API the templates are registered with (default http://127.0.0.1:8080, or
    /// TASKER_WORKER__ORCHESTRATOR_URL).
    #[arg(long)]
    orchestrator_url: Option<String>,
    /// Seconds handlers running at SIGTERM may take to finish and report (30 by default).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    shutdown_timeout: Option<u64>,
}

/// `--shutdown-timeout`: seconds (fractions allowed) as milliseconds.
fn seconds(text: &str) -> Result<u64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok((s * 1000.0).round() as u64),
        _ => Err(format!(
            "{text:?} is not a number of seconds from 0 to 86400"
        )),
    }
}

/// Why the worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setup(#[from] crate::setup::Error),
    #[error(transparent)]
    Refused(#[from] crate::registration::Refused),
    /// The broker refused this worker's user one of its namespaces' step queues.
    #[error(
        "{0}; give this worker's broker user read access to it, or remove the templates of that namespace"
    )]
    Broker(tasker_broker::Error),
    #[error(transparent)]
    Health(#[from] crate::health::BindError),
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Telemetry(#[from] tasker_telemetry::Error),
}

/// Runs a worker for `registry`'s handlers with the program's command-line flags until SIGTERM
/// or Ctrl-C, then stops gracefully. Prints why it could not start (exit code 1; 2 for bad
/// flags).
pub fn run(registry: Registry) -> ExitCode {
    // The templates are parsed in a child of this program, killed at its budget: call `run`
    // first thing in `main`, since the child runs `main` up to here.
    tasker_shared::template::child::serve_if_asked();
    let args = Args::parse();
    tasker_shared::logging::init("info");
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
        .and_then(|rt| rt.block_on(serve(args, registry)));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tasker worker: {e}");
            ExitCode::from(1)
        }
    }
}

async fn serve(args: Args, registry: Registry) -> Result<(), Error> {
    let setup = Setup::load(&Overrides {
        config_file: args.config,
        templates: args.templates,
        health_port: args.health_port,
        concurrency: args.concurrency,
        orchestrator_url: args.orchestrator_url,
        shutdown_timeout_ms: args.shutdown_timeout,
        handlers: Some({
            let mut names: Vec<String> = registry.names().map(str::to_owned).collect();
            names.sort();
            names
        }),
        register_templates: None,
        broker: None,
    })?;
    for t in &setup.templates {
        // Wait and child steps have no handler: the orchestrator resolves them.
        for step in t.template.steps.iter().filter(|s| s.runs_on_worker()) {
            if registry.get(&step.handler).is_none() {
                tracing::warn!(template = %t.template.key(), step = %step.name, handler = %step.handler,
                    "no handler registered under this name; such steps will fail");
            }
        }
    }
    let config = &setup.config;
    let _telemetry = crate::setup::telemetry(config, "rust")?;
    let host = Arc::new(
        RustHost::new(registry, config.worker.concurrency).with_priorities(
            std::time::Duration::from_millis(config.worker.priority_aging_ms),
            config.worker.low_priority_cap(),
        ),
    );
    let worker = Worker::new(setup.options.clone(), host);
    let namespaces = setup.namespaces.clone();
    // Stopping the worker, and (after it stopped) the health server and registration retries.
    let stop = CancellationToken::new();
    let stopped = CancellationToken::new();
    crate::registration::register_templates(&setup, "rust", &stopped).await?;
    worker.check_access().await.map_err(Error::Broker)?;
    crate::presence::spawn(&setup, "rust", config.worker.concurrency, &stop);
    let addr = crate::health::serve(
        setup.health_port(),
        worker.stats(),
        namespaces.clone(),
        "rust",
        stopped.clone(),
    )
    .await?;
    tracing::info!(health = %addr, namespaces = %namespaces.join(","), "tasker worker started");
    // One line on stdout that scripts and the conformance suite wait for.
    println!(
        "tasker worker ready: language=rust health={addr} namespaces={}",
        namespaces.join(",")
    );
    let on_signal = stop.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        on_signal.cancel();
    });
    // On the runtime's worker threads, not on this one (which `block_on` runs): from there a
    // step's handler task, its completion and its result publication stay on the thread that
    // took the step, where from this thread each would wake another.
    let running = tokio::spawn(async move { worker.run(stop).await });
    if let Err(e) = running.await {
        tracing::error!(error = %e, "the worker task failed");
    }
    stopped.cancel();
    tracing::info!("tasker worker stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shutdown_timeout_is_seconds_and_bounded() {
        assert_eq!(seconds("30"), Ok(30_000));
        assert_eq!(seconds("0.25"), Ok(250));
        assert_eq!(seconds("0"), Ok(0));
        assert!(seconds("-1").is_err());
        assert!(seconds("1e9").is_err());
        assert!(seconds("soon").is_err());
        assert!(seconds("NaN").is_err());
    }

    #[test]
    fn the_flags_are_those_of_every_language() {
        let args = Args::try_parse_from([
            "worker",
            "--templates",
            "t",
            "--config",
            "c.toml",
            "--health-port",
            "0",
            "--concurrency",
            "4",
            "--orchestrator-url",
            "http://o:8080",
            "--shutdown-timeout",
            "2.5",
        ])
        .unwrap();
        assert_eq!(args.shutdown_timeout, Some(2_500));
        assert_eq!(args.orchestrator_url.as_deref(), Some("http://o:8080"));
        assert!(Args::try_parse_from(["worker", "--handlers", "x"]).is_err());
    }
}
