//! `tasker-orchestrator`: the orchestration server binary.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use figment::providers::Serialized;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use tasker_orchestration::Orchestrator;
use tasker_orchestration::store::{NewToken, Scope, Store};
use tasker_shared::Config;
use tasker_shared::namespaces::Patterns;

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
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Create, list and revoke API tokens, in the database directly (the way to create the
    /// first one; afterwards an admin token can use `/v1/tokens`).
    Token {
        #[command(subcommand)]
        action: TokenCommand,
    },
    /// An orchestrator in test mode for a workflow test, on a database and queue prefix of its
    /// own: prints where it serves as one JSON line, serves until stdin closes, then deletes
    /// them (docs/testing.md). Its engine clock is the test's (`/v1/clock/advance`, `/skip`).
    TestEnv,
    /// Print the OpenAPI document of the REST API (what `GET /openapi.json` serves) and exit:
    /// the repository's openapi.json, from which the Python and TypeScript clients are generated.
    Openapi,
}

#[derive(Debug, clap::Subcommand)]
enum TokenCommand {
    /// Create a token and print it: the only time it is shown (only its SHA-256 is stored).
    Create {
        name: String,
        /// read (every GET), write (and create, cancel, repair tasks, register templates) or
        /// admin (and replay/discard dead letters, manage tokens).
        #[arg(long, default_value = "read", value_parser = ["read", "write", "admin"])]
        scope: String,
        /// The namespaces it covers, comma-separated; `*` matches any run of characters
        /// (`shop,billing_*`). Default: every namespace. A broker user of the same name may
        /// publish results for these namespaces only.
        #[arg(long)]
        namespaces: Option<String>,
        /// How long until it stops working: seconds, or a number with s, m, h or d (`90d`).
        /// Default: never.
        #[arg(long, value_parser = duration_seconds)]
        expires_in: Option<u64>,
    },
    /// The live tokens (never the tokens themselves).
    List,
    /// Revoke the live token named NAME; it stops working within seconds.
    Revoke { name: String },
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

fn main() -> anyhow::Result<()> {
    // Before anything else: this program may be its own template parser, in a child process
    // killed when a parse outlives its budget (tasker_shared::template::child).
    tasker_shared::template::child::serve_if_asked();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    tasker_shared::logging::init("info,sqlx=warn");
    let args = Args::parse();
    if matches!(args.command, Some(Command::Openapi)) {
        // Before the configuration: the document depends on no setting.
        println!("{}", tasker_orchestration::api::openapi_json());
        return Ok(());
    }
    let figment = Config::figment(args.config.as_deref()).merge(Serialized::defaults(Overrides {
        orchestrator: OrchestratorOverrides {
            bind: args.bind,
            templates: args.templates,
        },
    }));
    let config = Config::extract(&figment)?;
    if let Some(Command::Token { action }) = args.command {
        return token(&config, action).await;
    }
    if matches!(args.command, Some(Command::TestEnv)) {
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            on_signal.cancel();
        });
        return tasker_orchestration::test_env::run(config, stop).await;
    }
    // Tracing (off unless telemetry.otlp_endpoint is set); the last spans flush at exit.
    let _telemetry = tasker_telemetry::init(
        config.telemetry.otlp_endpoint.as_deref(),
        config
            .telemetry
            .service_name
            .as_deref()
            .unwrap_or("tasker-orchestrator"),
    )?;
    let bind = config.orchestrator.bind.clone();
    let orchestrator = Orchestrator::start(config)
        .await
        .context("starting the orchestrator")?;
    let listener = tokio::net::TcpListener::bind(&bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let scheme = if orchestrator.serves_tls() {
        "https"
    } else {
        "http"
    };
    // The address bound (a port of 0 picks a free one).
    let bound = listener.local_addr().map_or(bind, |a| a.to_string());
    tracing::info!(bind = %bound, scheme, "tasker-orchestrator listening");
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        on_signal.cancel();
    });
    orchestrator.run(listener, cancel).await?;
    // The last line of a graceful stop, as the workers end theirs.
    tracing::info!("tasker-orchestrator stopped");
    Ok(())
}

async fn token(config: &Config, action: TokenCommand) -> anyhow::Result<()> {
    let store = Store::connect(&config.database_url, 2)
        .await
        .context("connecting to PostgreSQL")?;
    match action {
        TokenCommand::Create {
            name,
            scope,
            namespaces,
            expires_in,
        } => {
            let scope = Scope::parse(&scope)
                .with_context(|| format!("unknown scope {scope:?}; use read, write or admin"))?;
            let namespaces = namespaces
                .as_deref()
                .map(Patterns::parse)
                .transpose()
                .context("--namespaces")?;
            let by = std::env::var("USER").map(|u| format!("user:{u}")).ok();
            let expires_at =
                expires_in.map(|s| chrono::Utc::now() + chrono::Duration::seconds(s as i64));
            let token = store
                .create_token(&NewToken {
                    name: &name,
                    scope,
                    namespaces: namespaces.as_ref(),
                    expires_at,
                    created_by: by.as_deref(),
                    minter: None,
                })
                .await?
                .token;
            let covers = namespaces.map_or("every namespace".to_owned(), |n| n.to_string());
            let until = expires_at.map_or(String::new(), |t| format!(", until {t}"));
            eprintln!(
                "created API token {name:?} ({scope}, {covers}{until}); it is shown only now:"
            );
            println!("{token}");
        }
        TokenCommand::List => {
            for t in store.tokens().await? {
                println!(
                    "{:<24} {:<6} {:<24} {}  {}  {}",
                    t.name,
                    t.scope,
                    t.namespaces.map_or("*".to_owned(), |n| n.join(",")),
                    t.created_at.format("%Y-%m-%d %H:%M:%S"),
                    t.expires_at.map_or("never expires".to_owned(), |e| format!(
                        "expires {}",
                        e.format("%Y-%m-%d %H:%M:%S")
                    )),
                    t.created_by.as_deref().unwrap_or("-")
                );
            }
        }
        TokenCommand::Revoke { name } => {
            let revoked = store.revoke_token(&name).await?;
            anyhow::ensure!(!revoked.is_empty(), "no live token named {name:?}");
            eprintln!("revoked API token {name:?}");
            for minted in revoked.iter().filter(|n| **n != name) {
                eprintln!("revoked API token {minted:?} with it (it was minted by it)");
            }
        }
    }
    Ok(())
}

/// Seconds from `3600`, `90s`, `15m`, `12h` or `90d`: at least a second, at most ten years.
fn duration_seconds(text: &str) -> Result<u64, String> {
    let (number, unit) = match text.trim().char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text.trim()[..i], c),
        _ => (text.trim(), 's'),
    };
    let factor = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(format!("{text:?}: the unit must be s, m, h or d")),
    };
    let seconds = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .filter(|s| (1..=10 * 365 * 86_400).contains(s))
        .ok_or_else(|| format!("{text:?} is not a duration from 1s to 3650d"))?;
    Ok(seconds)
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
