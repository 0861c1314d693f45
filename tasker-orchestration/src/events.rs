//! Events of this orchestrator, for API waiters, the template catalog and tests: tasks that
//! finished and template versions registered (here or on another orchestrator, through
//! PostgreSQL `LISTEN`), and results that were applied or ignored.

use sqlx::postgres::PgListener;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_broker::{Supervisor, supervisor};
use tasker_shared::TaskState;

use crate::store::{TASK_FINISHED_CHANNEL, TEMPLATE_REGISTERED_CHANNEL};

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
    /// The notification listener (re)connected: what it announces may have been missed before.
    ListenerConnected,
}

/// Cheap cloneable broadcast hub.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(4096).0,
        }
    }
}

impl Events {
    pub fn emit(&self, event: Event) {
        // No receiver is fine: nobody is waiting.
        let _ = self.tx.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// Relays `pg_notify` task completions and template registrations from every orchestrator
    /// until cancelled, reconnecting after a lost connection.
    pub async fn listen(self, database_url: String, cancel: CancellationToken) {
        Supervisor::new("notification listener", supervisor::Options::default())
            .run(&cancel, || async {
                tokio::select! {
                    () = cancel.cancelled() => Ok(()),
                    r = self.listen_once(&database_url) => r,
                }
            })
            .await;
    }

    async fn listen_once(&self, database_url: &str) -> Result<(), sqlx::Error> {
        let mut listener = PgListener::connect(database_url).await?;
        listener
            .listen_all([TASK_FINISHED_CHANNEL, TEMPLATE_REGISTERED_CHANNEL])
            .await?;
        self.emit(Event::ListenerConnected);
        loop {
            let n = listener.recv().await?;
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
