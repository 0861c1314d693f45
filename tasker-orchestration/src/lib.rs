//! The Tasker orchestration server: REST API, PostgreSQL state, dispatch of ready steps and
//! processing of results. Orchestrators are stateless and interchangeable: any number can run
//! against one database and one broker.
//!
//! [`Orchestrator::start`] connects and registers the templates of its `--templates` folders
//! (optional: workers and users register theirs through the API); [`Orchestrator::run`] serves until
//! cancelled. Every durable operation returns an [`effects::Effects`] that
//! [`executor::execute`] carries out after the commit.

mod alarm;
mod alerts;
pub mod api;
pub mod audit;
pub mod catalog;
mod children;
pub mod creates;
mod dead_letters;
pub mod dispatcher;
pub mod effects;
pub mod events;
pub mod executor;
mod latency;
pub mod live;
pub mod metrics;
mod operations;
pub mod reach;
pub mod reads;
mod recent;
mod results;
mod retention;
mod scheduler;
mod senders;
mod serve;
mod shared;
mod slots;
pub mod store;
pub mod stream_hub;
pub mod streams;
mod sweeper;
pub mod test_env;
mod timers;
pub mod tls;
pub mod webhook_sign;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use tasker_broker::{Broker, Supervisor, supervisor};

use crate::catalog::Catalog;
pub use crate::shared::Shared;
use crate::store::Store;

/// RabbitMQ's built-in administrator, whose password every local process knows.
const GUEST: &str = "guest";

/// Why the orchestrator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("template {0}")]
    Template(#[from] tasker_shared::template::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("registering templates: {0}")]
    Catalog(#[from] catalog::Error),
    #[error("{0}")]
    NoTokens(String),
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Tls(#[from] tls::Error),
}

/// An orchestration server, connected and ready to run.
#[derive(Debug)]
pub struct Orchestrator {
    shared: Shared,
    /// Set when the API is served over TLS.
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

impl Orchestrator {
    /// Loads the configured template folders, connects to PostgreSQL (applying migrations and
    /// the engine's functions) and registers the templates. The broker is connected by
    /// [`Orchestrator::run`].
    pub async fn start(config: tasker_shared::Config) -> Result<Orchestrator, Error> {
        // Read before anything connects, so that a certificate that cannot be used stops the
        // start at once.
        let tls = match (
            &config.orchestrator.tls_cert_file,
            &config.orchestrator.tls_key_file,
        ) {
            (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
            _ => None,
        };
        let mut loaded = Vec::new();
        for dir in &config.orchestrator.templates {
            loaded.extend(tasker_shared::template::load_dir(dir)?);
        }
        let inline = store::Inline {
            max_bytes: config.orchestrator.inline_max_bytes,
            max_parents: config.orchestrator.inline_max_parents,
            priority_aging_ms: config.orchestrator.priority_aging_ms,
        };
        let store = Store::connect_with(
            &config.database_url,
            config.orchestrator.db_max_connections,
            inline,
        )
        .await?
        .with_list_timeout(std::time::Duration::from_millis(
            config.orchestrator.list_timeout_ms,
        ));
        let replica = match &config.database.read_url {
            Some(url) => {
                Some(store.replica(url, config.orchestrator.db_max_connections, inline)?)
            }
            None => None,
        };
        let o = &config.orchestrator;
        if o.tokens_required() && store.tokens().await?.is_empty() {
            return Err(Error::NoTokens(format!(
                "the API at {} requires tokens and none exists; create one with \
                 `tasker-orchestrator token create <name> --scope admin`, or set \
                 orchestrator.auth = \"off\" (TASKER_ORCHESTRATOR__AUTH=off) to serve it \
                 without tokens to anyone who can reach it",
                o.bind
            )));
        }
        if !o.tokens_required() {
            if o.binds_loopback() {
                tracing::warn!(bind = %o.bind,
                    "the API is served without tokens (orchestrator.auth = \"off\"): anyone on this machine may use it");
            } else {
                tracing::warn!(bind = %o.bind,
                    "the API is served without tokens on an address other hosts may reach (orchestrator.auth = \"off\")");
            }
        }
        if tasker_broker::user_of(&config.amqp_url) == GUEST {
            tracing::warn!(
                "the orchestrator's broker user is `guest`, RabbitMQ's default administrator: \
                 any process that can reach the broker can log in as it and publish results the \
                 orchestrator trusts for every step; give the orchestrators a broker user of \
                 their own (docs/auth.md)"
            );
        }
        let registered_by = format!("orchestrator:{}", tasker_shared::config::process_name());
        let catalog = Catalog::load(store.clone(), &loaded, &registered_by).await?;
        tracing::info!(
            templates = loaded.len(),
            namespaces = %catalog.namespaces().join(","),
            "templates registered"
        );
        crate::metrics::handle();
        Ok(Orchestrator {
            shared: Shared::new(config, store, replica, catalog),
            tls,
        })
    }

    /// [`Orchestrator::start`] in test mode: the engine's clock is the test's to move
    /// (`POST /v1/clock/advance`, `/v1/clock/skip`). Only on a test's own database, as
    /// `tasker-orchestrator test-env` makes one (docs/testing.md).
    pub async fn start_test(config: tasker_shared::Config) -> Result<Orchestrator, Error> {
        let orchestrator = Self::start(config).await?;
        orchestrator.shared.store.use_test_clock().await?;
        tracing::warn!("test mode: the engine's clock moves when a test advances it");
        Ok(orchestrator)
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Whether the API is served over TLS (`https://`).
    pub fn serves_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves the API on `listener` (over TLS when configured) and processes results until
    /// `cancel` fires.
    pub async fn run(self, listener: TcpListener, cancel: CancellationToken) -> Result<(), Error> {
        let shared = self.shared;
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(
            shared
                .catalog
                .clone()
                .follow(shared.events.clone(), cancel.clone()),
        );
        tasks.spawn(
            shared
                .events
                .clone()
                .listen(shared.config.database_url.clone(), cancel.clone()),
        );
        tasks.spawn(sweeper::run(shared.clone(), cancel.clone()));
        tasks.spawn(timers::run(shared.clone(), cancel.clone()));
        tasks.spawn(retention::run(shared.clone(), cancel.clone()));
        tasks.spawn(operations::run(shared.clone(), cancel.clone()));
        tasks.spawn(alerts::run(shared.clone(), cancel.clone()));
        tasks.spawn(alerts::send::run(shared.clone(), cancel.clone()));
        tasks.spawn(streams::follow(shared.clone(), cancel.clone()));
        tasks.spawn(shared.live.clone().run(
            shared.store.clone(),
            shared.events.clone(),
            shared.config.orchestrator.parent_page_bytes,
            cancel.clone(),
        ));
        if let Some(dropped) = shared.dispatcher.take_dropped() {
            tasks.spawn(dispatcher::release_dropped(
                shared.store.clone(),
                dropped,
                cancel.clone(),
            ));
        }
        tasks.spawn(broker_loop(shared.clone(), cancel.clone()));
        // Open event streams (the dashboard's live views) end as soon as stopping begins, so
        // the graceful shutdown does not wait for browsers to leave.
        let (stopping, stop) = (cancel.clone(), shared.shutdown.clone());
        tasks.spawn(async move {
            stopping.cancelled().await;
            stop.cancel();
        });
        let app = api::router(shared.clone());
        let limits = serve::Limits::from_config(&shared.config.orchestrator);
        let served = serve::serve(listener, self.tls, app, limits, cancel.clone()).await;
        cancel.cancel();
        // The API answers nothing more: every request's audit row is in the writer's hands.
        shared.audit.stop().await;
        shared.shutdown.cancel();
        while tasks.join_next().await.is_some() {}
        Ok(served?)
    }
}

/// Keeps a broker connection: connect, declare, attach the dispatcher, consume results; on
/// failure, detach and reconnect. Unacknowledged results return to the queue and are applied
/// by whichever orchestrator takes them; duplicates are ignored by the guarded updates.
async fn broker_loop(shared: Shared, cancel: CancellationToken) {
    let name = format!("tasker-orchestrator-{}", std::process::id());
    Supervisor::new(
        "broker (results, dispatch, dead letters)",
        supervisor::Options::default(),
    )
    .run(&cancel, || broker_session(&shared, &name, &cancel))
    .await;
}

async fn broker_session(
    shared: &Shared,
    name: &str,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let config = &shared.config;
    let broker = Broker::connect_with(
        &config.amqp_url,
        &config.queue_prefix,
        name,
        config.tls_ca_file.as_deref(),
    )
    .await?
    .quorum(config.broker.queue_type == tasker_shared::config::QueueType::Quorum);
    if let Err(e) = shared
        .dispatcher
        .attach(broker.clone(), &shared.catalog.namespaces())
        .await
    {
        broker.close().await;
        return Err(e);
    }
    tracing::info!("connected to the broker");
    shared.set_broker_up(true);
    let outcome = tokio::try_join!(
        results::run(shared, &broker, cancel),
        streams::run(shared, &broker, cancel),
        dead_letters::run(shared, &broker, cancel)
    )
    .map(|_| ());
    shared.set_broker_up(false);
    shared.dispatcher.detach().await;
    broker.close().await;
    outcome
}
