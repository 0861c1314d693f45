//! The orchestrator's state shared by the API, the result processor, the sweeper and retry
//! timers: cheap to clone, every field a handle.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::alarm::Alarm;
use crate::audit::Audit;
use crate::catalog::Catalog;
use crate::dispatcher::Dispatcher;
use crate::events::Events;
use crate::latency::TaskLatency;
use crate::live::Live;
use crate::recent::Recent;
use crate::senders::Senders;
use crate::store::{Principal, Store};
use crate::stream_hub::StreamHub;

/// Handles to everything a running orchestrator uses.
#[derive(Debug, Clone)]
pub struct Shared {
    pub config: Arc<tasker_shared::Config>,
    pub store: Store,
    pub catalog: Arc<Catalog>,
    pub dispatcher: Dispatcher,
    pub events: Events,
    /// Fires when the orchestrator stops: background work (retry timers) ends with it.
    pub shutdown: CancellationToken,
    /// Valid API tokens seen lately, by token.
    pub tokens: Arc<Recent<Principal>>,
    /// Tokens PostgreSQL did not know lately: asked again only after `recent::TRUST_FOR`, so a
    /// flood of made-up tokens costs no query each (bounded like `tokens`, and apart from it,
    /// so the flood never pushes a valid token out).
    pub unknown_tokens: Arc<Recent<()>>,
    /// The broker users results came from lately, and what they may move.
    pub senders: Arc<Senders>,
    /// The watcher the live event streams share.
    pub live: Arc<Live>,
    /// The hub the step stream readers share.
    pub streams: Arc<StreamHub>,
    /// Rings the timer of waits, delayed starts and schedules (`crate::timers`).
    pub alarm: Alarm,
    /// Records the latency of finished tasks (`crate::latency`).
    pub latency: TaskLatency,
    /// Writes the audit log (`crate::audit`).
    pub audit: Audit,
    /// Wakes this orchestrator's operations loop (`crate::operations`): one was started.
    pub operations: Arc<tokio::sync::Notify>,
    /// Where the API reads what may lag (`crate::reads`): the replica of `database.read_url`.
    pub reads: crate::reads::Reads,
    /// Wakes this orchestrator's alert sender (`crate::alerts::send`): notices were queued.
    pub alert_notices: Arc<tokio::sync::Notify>,
    broker_up: Arc<watch::Sender<bool>>,
}

impl Shared {
    pub(crate) fn new(
        config: tasker_shared::Config,
        store: Store,
        replica: Option<Store>,
        catalog: Catalog,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let reads = match replica {
            Some(replica) => {
                crate::reads::Reads::with_replica(store.clone(), replica, shutdown.clone())
            }
            None => crate::reads::Reads::default(),
        };
        Self {
            alarm: Alarm::new(shutdown.clone()),
            latency: TaskLatency::start(store.clone(), shutdown.clone()),
            audit: Audit::start(store.clone()),
            operations: Arc::new(tokio::sync::Notify::new()),
            alert_notices: Arc::new(tokio::sync::Notify::new()),
            reads,
            dispatcher: Dispatcher::new(&config.queue_prefix, &config.orchestrator),
            senders: Arc::new(Senders::new(&tasker_broker::user_of(&config.amqp_url))),
            live: Arc::new(Live::new(&config.orchestrator)),
            streams: StreamHub::new(
                store.clone(),
                config.orchestrator.max_event_streams,
                config.orchestrator.max_event_streams_per_token,
            ),
            config: Arc::new(config),
            store,
            catalog: Arc::new(catalog),
            events: Events::default(),
            shutdown,
            tokens: Arc::default(),
            unknown_tokens: Arc::default(),
            broker_up: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Whether the API requires tokens ([`tasker_shared::config::OrchestratorConfig::tokens_required`]).
    pub fn auth_required(&self) -> bool {
        self.config.orchestrator.tokens_required()
    }

    /// Whether a broker connection is attached.
    pub fn broker_up(&self) -> bool {
        *self.broker_up.borrow()
    }

    /// Changes of broker connectivity, to wait for readiness without polling.
    pub fn broker_watch(&self) -> watch::Receiver<bool> {
        self.broker_up.subscribe()
    }

    pub(crate) fn set_broker_up(&self, up: bool) {
        self.broker_up.send_replace(up);
    }
}
