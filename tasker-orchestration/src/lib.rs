//! The Tasker orchestration server: REST API, PostgreSQL state, dispatch of ready steps and
//! processing of results. Orchestrators are stateless and interchangeable: any number can run
//! against one database and one broker.
//!
//! [`Orchestrator::start`] connects and registers templates; [`Orchestrator::run`] serves until
//! cancelled.

pub mod api;
pub mod catalog;
pub mod dispatcher;
pub mod events;
pub mod metrics;
mod results;
pub mod store;
mod sweeper;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_broker::Broker;
use tasker_shared::Config;

use crate::catalog::Catalog;
use crate::dispatcher::Dispatcher;
use crate::events::{Event, Events};
use crate::store::{Applied, Store};

/// Why the orchestrator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("template {0}")]
    Template(#[from] tasker_shared::template::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
}

/// State shared by the API, the result processor, the sweeper and retry timers.
#[derive(Debug, Clone)]
pub struct Shared {
    pub config: Arc<tasker_shared::Config>,
    pub store: Store,
    pub catalog: Arc<Catalog>,
    pub dispatcher: Dispatcher,
    pub events: Events,
    broker_up: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Shared {
    /// Whether a broker connection is attached.
    pub fn broker_up(&self) -> bool {
        *self.broker_up.borrow()
    }

    /// Changes of broker connectivity, to wait for readiness without polling.
    pub fn broker_watch(&self) -> tokio::sync::watch::Receiver<bool> {
        self.broker_up.subscribe()
    }

    /// After a committed batch: publish what it made ready, arm retry timers, announce.
    pub(crate) async fn settle(&self, applied: Applied, cancel: &CancellationToken) {
        self.dispatcher.publish(&applied.dispatch).await;
        for (step_id, delay) in &applied.retries {
            self.schedule_retry(*step_id, *delay, cancel.clone());
        }
        ::metrics::counter!("tasker_results_applied_total").increment(applied.accepted as u64);
        ::metrics::counter!("tasker_results_ignored_total").increment(applied.ignored.len() as u64);
        for (task_id, state) in &applied.finished {
            ::metrics::counter!("tasker_tasks_finished_total", "state" => state.as_str())
                .increment(1);
            self.events.emit(Event::TaskFinished {
                task_id: *task_id,
                state: *state,
            });
        }
        self.events.emit(Event::ResultsApplied {
            accepted: applied.accepted,
            ignored: applied.ignored,
        });
    }

    /// Starts the next attempt of `step_id` once its backoff elapsed. If this process dies
    /// first, the sweeper starts it.
    pub(crate) fn schedule_retry(&self, step_id: Uuid, delay: Duration, cancel: CancellationToken) {
        let shared = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            match shared.store.dispatch_retries(&[step_id]).await {
                Ok(messages) => shared.dispatcher.publish(&messages).await,
                Err(e) => {
                    tracing::warn!(step = %step_id, error = %e, "retry dispatch failed; the sweeper will retry")
                }
            }
        });
    }
}

/// An orchestration server, connected and ready to run.
#[derive(Debug)]
pub struct Orchestrator {
    shared: Shared,
}

impl Orchestrator {
    /// Loads the configured template folders, connects to PostgreSQL (applying migrations)
    /// and registers the templates. The broker is connected by [`Orchestrator::run`].
    pub async fn start(config: tasker_shared::Config) -> Result<Orchestrator, Error> {
        let mut loaded = Vec::new();
        for dir in &config.orchestrator.templates {
            loaded.extend(tasker_shared::template::load_dir(dir)?);
        }
        let store =
            Store::connect(&config.database_url, config.orchestrator.db_max_connections).await?;
        let catalog = Catalog::load(store.clone(), &loaded).await?;
        tracing::info!(
            templates = loaded.len(),
            namespaces = ?catalog.namespaces(),
            "templates registered"
        );
        crate::metrics::handle();
        Ok(Orchestrator {
            shared: Shared {
                dispatcher: Dispatcher::new(&config.queue_prefix),
                config: Arc::new(config),
                store,
                catalog: Arc::new(catalog),
                events: Events::default(),
                broker_up: Arc::new(tokio::sync::watch::Sender::new(false)),
            },
        })
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Serves the API on `listener` and processes results until `cancel` fires.
    pub async fn run(self, listener: TcpListener, cancel: CancellationToken) -> Result<(), Error> {
        let shared = self.shared;
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(
            shared
                .events
                .clone()
                .listen(shared.config.database_url.clone(), cancel.clone()),
        );
        tasks.spawn(sweeper::run(shared.clone(), cancel.clone()));
        tasks.spawn(broker_loop(shared.clone(), cancel.clone()));
        let app = api::router(shared.clone());
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(cancel.clone().cancelled_owned())
            .await;
        cancel.cancel();
        while tasks.join_next().await.is_some() {}
        Ok(served?)
    }
}

/// Keeps a broker connection: connect, declare, attach the dispatcher, consume results; on
/// failure, detach and reconnect. Unacknowledged results return to the queue and are applied
/// by whichever orchestrator takes them; duplicates are ignored by the guarded updates.
async fn broker_loop(shared: Shared, cancel: CancellationToken) {
    let config = shared.config.clone();
    let name = format!("tasker-orchestrator-{}", std::process::id());
    loop {
        match connect(&shared, &config, &name).await {
            Ok(broker) => {
                shared.broker_up.send_replace(true);
                let outcome = results::run(&shared, &broker, &cancel).await;
                shared.broker_up.send_replace(false);
                shared.dispatcher.detach().await;
                broker.close().await;
                match outcome {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(error = %e, "broker connection lost; reconnecting"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot reach the broker; retrying"),
        }
        // Deliberate backoff between reconnection attempts.
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

async fn connect(
    shared: &Shared,
    config: &Config,
    name: &str,
) -> Result<Broker, tasker_broker::Error> {
    let broker = Broker::connect(&config.amqp_url, &config.queue_prefix, name).await?;
    shared
        .dispatcher
        .attach(broker.clone(), &shared.catalog.namespaces())
        .await?;
    tracing::info!("connected to the broker");
    Ok(broker)
}
