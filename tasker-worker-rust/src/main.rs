//! `tasker-worker-rust`: the native worker. It reads the templates in the folder it is given,
//! consumes only their namespaces' queues, and runs the Rust handlers of this crate.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use tasker_worker::{Overrides, RustHost, Setup, Worker};

/// Tasker worker running native Rust step handlers.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// TOML configuration file (see config/tasker.reference.toml).
    #[arg(long, env = "TASKER_CONFIG")]
    config: Option<PathBuf>,
    /// Folder of task templates; the worker consumes their namespaces.
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Port of /health and /metrics (0 picks a free port); the address is worker.health_bind
    /// (127.0.0.1 by default).
    #[arg(long)]
    health_port: Option<u16>,
    /// Steps run at the same time.
    #[arg(long)]
    concurrency: Option<usize>,
    /// Orchestrator API the templates are registered with at start-up.
    #[arg(long)]
    orchestrator_url: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tasker_worker::init_logging("info");
    let args = Args::parse();
    let setup = Setup::load(&Overrides {
        config_file: args.config,
        templates: args.templates,
        health_port: args.health_port,
        concurrency: args.concurrency,
        orchestrator_url: args.orchestrator_url,
    })?;
    let registry = tasker_worker_rust::registry();
    for t in &setup.templates {
        for step in &t.template.steps {
            if registry.get(&step.handler).is_none() {
                tracing::warn!(template = %t.template.key(), step = %step.name, handler = %step.handler,
                    "no Rust handler registered; such steps will fail");
            }
        }
    }
    let config = &setup.config;
    let host = Arc::new(RustHost::new(registry, config.worker.concurrency));
    let worker = Worker::new(setup.options.clone(), host);
    let namespaces = setup.namespaces.clone();
    let cancel = CancellationToken::new();
    tasker_worker::register_templates(&setup, "rust", &cancel).await?;
    let addr = tasker_worker::health::serve(
        config.worker.health_bind,
        config.worker.health_port,
        worker.stats(),
        namespaces.clone(),
        "rust",
        cancel.clone(),
    )
    .await
    .with_context(|| {
        let w = &config.worker;
        format!(
            "binding the health port {}:{}",
            w.health_bind, w.health_port
        )
    })?;
    tracing::info!(health = %addr, ?namespaces, "tasker-worker-rust started");
    // One line on stdout that scripts and the conformance suite wait for.
    println!(
        "tasker worker ready: language=rust health={addr} namespaces={}",
        namespaces.join(",")
    );
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        on_signal.cancel();
    });
    worker.run(cancel).await;
    Ok(())
}
