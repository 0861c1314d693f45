//! Events of this orchestrator, for API waiters, the template catalog and tests: tasks that
//! finished, template versions registered and stream chunks kept (here or on another orchestrator, through
//! PostgreSQL `LISTEN`), and results that were applied or ignored.

use sqlx::postgres::PgListener;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_broker::{Supervisor, supervisor};
use tasker_shared::TaskState;

use crate::store::{
    STREAM_KEPT_CHANNEL, TASK_FINISHED_CHANNEL, TEMPLATE_REGISTERED_CHANNEL, WAKE_CHANNEL,
};

/// Something that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    TaskFinished {
        task_id: Uuid,
        state: TaskState,
    },
    /// Results that changed state, and the steps whose result was a duplicate or stale.
    ResultsApplied {
        accepted: usize,
        ignored: Vec<Uuid>,
    },
    /// The sweeper finished a round (timeouts, re-publishing, due retries).
    Swept,
    /// A template version was registered (by any orchestrator).
    TemplateRegistered {
        id: Uuid,
    },
    /// The catalog loaded a version it did not hold: `namespace/name@version`.
    TemplateLoaded {
        key: String,
    },
    /// This orchestrator kept a dead letter (new, or the same message seen again).
    DeadLetterKept {
        id: i64,
    },
    /// Chunks of these tasks' streams were kept (by any orchestrator): each task's stream
    /// reaches this position now.
    StreamKept {
        heads: Vec<(Uuid, i64)>,
    },
    /// The notification listener (re)connected: what it announces may have been missed before.
    ListenerConnected,
}

impl Event {
    /// Whether the template catalog follows it (see [`Events::subscribe_templates`]).
    fn concerns_templates(&self) -> bool {
        matches!(
            self,
            Event::TemplateRegistered { .. } | Event::ListenerConnected
        )
    }
}

/// Cheap cloneable broadcast hub.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
    /// Template registrations and listener reconnects only, so that the catalog never lags
    /// behind a flood of task events (a lag costs it a reload of every template).
    templates: broadcast::Sender<Event>,
    /// Whether the notification listener is connected.
    listening: std::sync::Arc<watch::Sender<bool>>,
    /// Rung when any orchestrator's commit woke a step (a child task ended): the timer looks.
    woken: std::sync::Arc<tokio::sync::Notify>,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(4096).0,
            templates: broadcast::channel(256).0,
            listening: std::sync::Arc::new(watch::Sender::new(false)),
            woken: std::sync::Arc::default(),
        }
    }
}

impl Events {
    pub fn emit(&self, event: Event) {
        // No receiver is fine: nobody is waiting.
        if event.concerns_templates() {
            let _ = self.templates.send(event.clone());
        }
        let _ = self.tx.send(event);
    }

    /// Template registrations and listener (re)connections only.
    pub fn subscribe_templates(&self) -> broadcast::Receiver<Event> {
        self.templates.subscribe()
    }

    /// Changes of the notification listener's connection, to wait for it without polling.
    pub fn listening(&self) -> watch::Receiver<bool> {
        self.listening.subscribe()
    }

    /// Waits until a commit anywhere woke a step (`pg_notify` on [`WAKE_CHANNEL`]); several
    /// wakes while nobody waits count as one.
    pub async fn woken(&self) {
        self.woken.notified().await;
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// Relays `pg_notify` task completions and template registrations from every orchestrator
    /// until cancelled, reconnecting after a lost connection.
    pub async fn listen(self, database_url: String, cancel: CancellationToken) {
        Supervisor::new("notification listener", supervisor::Options::default())
            .run(&cancel, || async {
                let outcome = tokio::select! {
                    () = cancel.cancelled() => Ok(()),
                    r = self.listen_once(&database_url) => r,
                };
                self.listening.send_replace(false);
                outcome
            })
            .await;
    }

    async fn listen_once(&self, database_url: &str) -> Result<(), sqlx::Error> {
        let mut listener = PgListener::connect(database_url).await?;
        listener
            .listen_all([
                TASK_FINISHED_CHANNEL,
                TEMPLATE_REGISTERED_CHANNEL,
                WAKE_CHANNEL,
                STREAM_KEPT_CHANNEL,
            ])
            .await?;
        self.listening.send_replace(true);
        self.emit(Event::ListenerConnected);
        // Wakes announced while the listener was away: look once.
        self.woken.notify_one();
        loop {
            let n = listener.recv().await?;
            if n.channel() == WAKE_CHANNEL {
                self.woken.notify_one();
                continue;
            }
            if n.channel() == STREAM_KEPT_CHANNEL {
                let heads = crate::store::parse_kept(n.payload());
                if !heads.is_empty() {
                    self.emit(Event::StreamKept { heads });
                }
                continue;
            }
            if n.channel() == TEMPLATE_REGISTERED_CHANNEL {
                if let Ok(id) = n.payload().parse() {
                    self.emit(Event::TemplateRegistered { id });
                }
                continue;
            }
            let Some((id, state)) = n.payload().split_once(':') else {
                continue;
            };
            if let (Ok(task_id), Some(state)) = (id.parse(), TaskState::parse(state)) {
                self.emit(Event::TaskFinished { task_id, state });
            }
        }
    }
}
