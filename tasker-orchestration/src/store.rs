//! PostgreSQL storage behind a narrow interface: create a task, apply a batch of results, cancel,
//! sweep, and the read models of the API.
//!
//! The engine — every step and task transition — lives in PostgreSQL, in the functions of
//! `sql/` (`functions`); this module calls them and turns their answers into
//! [`Effects`](crate::effects::Effects). Every state change there is a guarded
//! `UPDATE … WHERE state = <from> [AND attempt = <n>]`, so duplicate and stale messages change
//! nothing, and it is recorded in the append-only `transitions` table.

use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgPool, PgPoolOptions};
use uuid::Uuid;

mod alert_checks;
mod alerts;
mod audit;
mod batch;
mod children;
mod clock;
mod controls;
mod create_batch;
mod dead_letters;
mod deadlines;
mod error;
mod events;
mod flow;
mod functions;
mod letter_operations;
#[cfg(test)]
mod migrations_lock;
mod operations;
mod read;
mod repair;
mod replay;
mod results;
mod retention;
mod schedules;
mod stream_reads;
mod streams;
mod sweep;
mod tasks;
mod templates;
mod time;
mod tokens;
mod webhooks;
mod workers;

pub use alert_checks::{AlertChecks, CHECK_EVERY_MS, Checked, DueRule, Outgoing};
pub use alerts::{AlertRow, NewAlert};
pub use audit::{AuditEntry, AuditFilter, NewAuditEntry};
pub use batch::Batch;
pub use children::ChildStart;
pub use clock::EngineClock;
pub use controls::{Controlled, Controls};
pub use create_batch::CreateBatch;
pub use dead_letters::{DeadLetter, DeadLetterView, NewDeadLetter};
pub use deadlines::Passed;
pub use error::{Error, Result};
pub use events::{NewEvent, Stored};
pub use flow::Drift;
pub use functions::{Applied, apply_engine, engine};
pub use letter_operations::Replay;
pub use operations::{Claimed, NewOperation, Started};
pub use read::{StepView, TaskFilter, TaskView};
pub use repair::{Repair, Repaired};
pub use results::Held;
pub use retention::{Cutoffs, PurgeBatch, PurgeSession, Tombstone};
pub use schedules::{Fire, ScheduleRow, ScheduleTx};
pub use stream_reads::{Children, ReadChunk, StreamRead};
pub use streams::{Kept, KeptChunk, Offered, STREAM_KEPT_CHANNEL, parse_kept};
pub use tasks::{BatchAnswer, Created, NewTask, ParentLink};
pub use templates::{Registration, TEMPLATE_REGISTERED_CHANNEL, TemplateFilter, TemplateView};
pub use time::Signalled;
pub use tokens::{CreateError, Minted, NewToken, Principal, Scope, TokenView, lifetime_within};
pub use webhooks::{NewWebhook, WebhookRow};
pub use workers::Served;

/// Channel of the `pg_notify` sent when a task reaches a terminal state; the payload is
/// `<task id>:<state>`.
pub const TASK_FINISHED_CHANNEL: &str = "tasker_task_finished";
/// Notified (by `tasker_task_ended`) when a commit woke a step: a child task ended.
pub const WAKE_CHANNEL: &str = "tasker_wake";

/// Handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
    /// This orchestrator's id: every step it dispatches records it (`steps.dispatched_by`,
    /// through the `tasker.orchestrator` setting of each pooled connection).
    instance: Uuid,
    /// How long a list query may run (`orchestrator.list_timeout_ms`).
    list_timeout: Duration,
    /// The engine's clock as the Rust code reads it (test mode moves it).
    clock: EngineClock,
}

/// Above what a step message carries its context and parent results by reference.
#[derive(Debug, Clone, Copy)]
pub struct Inline {
    /// A context (or a set of parent results) larger than this, in bytes of JSON.
    pub max_bytes: usize,
    /// More parents than this.
    pub max_parents: usize,
    /// The priority aging of throttled steps (`orchestrator.priority_aging_ms`), which each
    /// session gives `tasker_claim` with these thresholds.
    pub priority_aging_ms: u64,
}

impl Default for Inline {
    fn default() -> Self {
        let d = tasker_shared::config::OrchestratorConfig::default();
        Inline {
            max_bytes: d.inline_max_bytes,
            max_parents: d.inline_max_parents,
            priority_aging_ms: d.priority_aging_ms,
        }
    }
}

impl Store {
    /// Connects, applies pending migrations, then (re)creates the engine's functions.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store> {
        Self::connect_with(url, max_connections, Inline::default()).await
    }

    /// [`Store::connect`] with the thresholds above which step messages carry references.
    pub async fn connect_with(url: &str, max_connections: u32, inline: Inline) -> Result<Store> {
        let instance = Uuid::now_v7();
        let pool = pool_options(instance, max_connections, inline)
            .connect(url)
            .await?;
        migrator().run(&pool).await?;
        match functions::apply(&pool).await? {
            functions::Applied::Applied => tracing::info!("engine SQL applied"),
            functions::Applied::Unchanged => {}
            functions::Applied::Newer(release) => tracing::info!(%release,
                "the engine SQL in the database is a newer release's; running with it"),
        }
        let store = Store {
            pool,
            instance,
            list_timeout: Duration::from_millis(
                tasker_shared::config::OrchestratorConfig::default().list_timeout_ms,
            ),
            clock: EngineClock::default(),
        };
        store.heartbeat().await?;
        Ok(store)
    }

    /// The same store reading from a streaming replica at `url` (`database.read_url`): its own
    /// pool of `max_connections`, sessions set up alike; it migrates nothing (the primary does).
    /// It connects when first used, so a replica that is down never stops a start.
    pub fn replica(&self, url: &str, max_connections: u32, inline: Inline) -> Result<Store> {
        let pool = pool_options(self.instance, max_connections, inline)
            .acquire_timeout(Duration::from_secs(2))
            .connect_lazy(url)?;
        Ok(Store {
            pool,
            instance: self.instance,
            list_timeout: self.list_timeout,
            clock: self.clock.clone(),
        })
    }

    /// Where the primary inserts WAL now (bytes from the start): every commit answered before
    /// this call is below it.
    pub async fn wal_position(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// How far a replica has replayed the primary's WAL (a server that is no replica: all of it).
    pub async fn replay_position(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, \
                             9223372036854775807)",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// This orchestrator's id.
    pub fn instance(&self) -> Uuid {
        self.instance
    }

    /// Says this orchestrator is alive (the sweeper calls it every round).
    pub async fn heartbeat(&self) -> Result<()> {
        sqlx::query(
            "INSERT INTO orchestrators (id) VALUES ($1)
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp()",
        )
        .bind(self.instance)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Whether this orchestrator is the longest-running of those that heartbeat within `live`
    /// (the one that reports the cluster's gauges).
    pub async fn is_eldest(&self, live: Duration) -> Result<bool> {
        Ok(sqlx::query_scalar(
            "SELECT COALESCE((SELECT id FROM orchestrators
                              WHERE heartbeat_at > clock_timestamp() - make_interval(secs => $2)
                              ORDER BY started_at, id LIMIT 1) = $1, false)",
        )
        .bind(self.instance)
        .bind(live.as_secs_f64())
        .fetch_one(&self.pool)
        .await?)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The same store, its list queries stopped after `timeout`.
    pub fn with_list_timeout(mut self, timeout: Duration) -> Self {
        self.list_timeout = timeout;
        self
    }

    /// The rows of a list query, in a transaction whose statements PostgreSQL stops after the
    /// list timeout ([`Error::TimedOut`]): no filter a caller writes holds a connection longer.
    async fn list<'q, T>(
        &self,
        query: sqlx::query::QueryAs<'q, sqlx::Postgres, T, sqlx::postgres::PgArguments>,
    ) -> Result<Vec<T>>
    where
        T: Send + Unpin + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
    {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT set_config('statement_timeout', $1, true)")
            .bind(self.list_timeout.as_millis().to_string())
            .execute(&mut *tx)
            .await?;
        let rows = query.fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok(rows)
    }
}

/// The schema migrations in `migrations/`; released ones are never edited
/// (`migrations.lock`, checked by a test).
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Runs a statement that is its own transaction, again (up to five times) when PostgreSQL chose
/// it as a deadlock victim or failed it for serialization: the whole statement is retried.
async fn retry_deadlocks<T, F>(conn: &mut sqlx::PgConnection, mut statement: F) -> Result<T>
where
    F: for<'c> FnMut(&'c mut sqlx::PgConnection) -> futures_util::future::BoxFuture<'c, Result<T>>,
{
    let mut attempt = 0;
    loop {
        match statement(&mut *conn).await {
            Err(e) if e.is_retryable() && attempt < 5 => {
                attempt += 1;
                tracing::debug!(error = %e, attempt, "retrying after a deadlock");
            }
            other => return other,
        }
    }
}

/// Decodes the JSON answer of an engine function.
fn decode<T: serde::de::DeserializeOwned>(function: &'static str, v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|source| Error::Answer { function, source })
}

/// A pool whose sessions identify orchestrator `instance` and carry the engine's settings.
fn pool_options(instance: Uuid, max_connections: u32, inline: Inline) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                // Generic plans: the engine's statements are keyed by ids, so a plan made
                // once per session serves every call (custom plans re-plan each one).
                sqlx::query(
                    "SELECT set_config('tasker.orchestrator', $1, false), \
                            set_config('plan_cache_mode', 'force_generic_plan', false), \
                            set_config('tasker.inline_max_bytes', $2, false), \
                            set_config('tasker.inline_max_parents', $3, false), \
                            set_config('tasker.priority_aging_ms', $4, false)",
                )
                .bind(instance.to_string())
                .bind(inline.max_bytes.to_string())
                .bind(inline.max_parents.to_string())
                .bind(inline.priority_aging_ms.to_string())
                .execute(conn)
                .await?;
                Ok(())
            })
        })
}
