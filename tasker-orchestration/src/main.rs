//! `tasker-orchestrator`: the orchestration server binary.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use figment::providers::Serialized;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use tasker_orchestration::Orchestrator;
use tasker_shared::Config;

/// Tasker orchestration server: REST API, task state in PostgreSQL, dispatch over RabbitMQ.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// TOML configuration file (see config/tasker.reference.toml).
    #[arg(long, env = "TASKER_CONFIG")]
    config: Option<PathBuf>,
    /// Address of the REST API, e.g. 127.0.0.1:8080.
    #[arg(long)]
    bind: Option<String>,
    /// Folder of task templates to register (repeatable; searched recursively).
    #[arg(long)]
    templates: Vec<PathBuf>,
}

#[derive(Serialize)]
struct Overrides {
    orchestrator: OrchestratorOverrides,
}

#[derive(Serialize)]
struct OrchestratorOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    bind: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    templates: Vec<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tasker_shared::logging::init("info,sqlx=warn");
    let args = Args::parse();
    let figment = Config::figment(args.config.as_deref()).merge(Serialized::defaults(Overrides {
        orchestrator: OrchestratorOverrides {
            bind: args.bind,
            templates: args.templates,
        },
    }));
    let config = Config::extract(&figment)?;
    let bind = config.orchestrator.bind.clone();
    let orchestrator = Orchestrator::start(config)
        .await
        .context("starting the orchestrator")?;
    let listener = tokio::net::TcpListener::bind(&bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    tracing::info!(%bind, "tasker-orchestrator listening");
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        on_signal.cancel();
    });
    orchestrator.run(listener, cancel).await?;
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
