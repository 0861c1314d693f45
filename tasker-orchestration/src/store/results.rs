//! Applying result batches (`tasker_apply_results`, one statement and one commit a batch) and
//! dispatching steps (`tasker_dispatch`, `tasker_step_messages`), with the answers turned into
//! [`Effects`].

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::postgres::PgPool;
use uuid::Uuid;

use tasker_shared::{StepMessage, TaskState};

use super::{Error, Result, Store, decode, retry_deadlocks};
use crate::effects::{ChildStep, Effects, Rejected, ResultCounts};

/// The JSON answer of `tasker_dispatch` (`tasker_dispatched`): the first messages, the steps
/// whose messages are built page by page after the commit, and the steps the orchestrator
/// holds itself (`tasker_hold`).
#[derive(serde::Deserialize)]
pub(super) struct Dispatched {
    messages: Vec<StepMessage>,
    deferred: Vec<Uuid>,
    #[serde(flatten)]
    claimed: Claimed,
    #[serde(flatten)]
    pub(super) held: HeldSteps,
}

/// The steps of a dispatch that the orchestrator holds instead of sending (`tasker_hold`):
/// waits begun in the dispatching transaction, and child steps whose children to start.
#[derive(serde::Deserialize, Default)]
pub(super) struct HeldSteps {
    #[serde(default)]
    waits: Vec<RetryRow>,
    #[serde(default)]
    children: Vec<ChildStep>,
}

impl HeldSteps {
    /// Adds the held steps to `effects`: the waits' wakes and the children to start.
    pub(super) fn into_effects(self, effects: &mut Effects) {
        effects
            .waits
            .extend(self.waits.iter().map(|r| Duration::from_millis(r.delay_ms)));
        effects.children.extend(self.children);
    }
}

/// What claiming limits left (`tasker_claim`, through `tasker_dispatch`): the throttled steps
/// whose start is timed (a rate token reserved, a pause's end), and how long each throttled
/// step now enqueued waited.
#[derive(serde::Deserialize, Default)]
pub(super) struct Claimed {
    #[serde(default)]
    throttled: Vec<RetryRow>,
    #[serde(default)]
    waited: Vec<Waited>,
}

#[derive(serde::Deserialize)]
struct Waited {
    kind: String,
    seconds: f64,
}

impl Claimed {
    /// The timed waits, as alarms to arm (the timers dispatch every throttled step due at
    /// once, `tasker_wake_throttled`).
    pub(super) fn alarms(&self) -> Vec<Duration> {
        self.throttled
            .iter()
            .map(|r| Duration::from_millis(r.delay_ms))
            .collect()
    }

    /// The waits that ended, by kind, in seconds.
    pub(super) fn waits(&self) -> Vec<(String, f64)> {
        self.waited
            .iter()
            .map(|w| (w.kind.clone(), w.seconds))
            .collect()
    }
}

impl From<Dispatched> for Effects {
    fn from(d: Dispatched) -> Self {
        let mut effects = Effects {
            alarms: d.claimed.alarms(),
            throttle_waits: d.claimed.waits(),
            dispatch: d.messages,
            deferred: d.deferred,
            ..Effects::default()
        };
        d.held.into_effects(&mut effects);
        effects
    }
}

/// The JSON answer of `tasker_apply_results`.
#[derive(serde::Deserialize)]
struct AppliedRow {
    accepted: usize,
    ignored: Vec<Uuid>,
    rejected: Vec<RejectedRow>,
    dispatch: Dispatched,
    finished: Vec<FinishedRow>,
    retries: Vec<RetryRow>,
    #[serde(default)]
    tallied: Vec<Uuid>,
}

#[derive(serde::Deserialize)]
struct RejectedRow {
    /// 1-based position in the batch.
    i: usize,
    code: String,
    detail: String,
}

#[derive(serde::Deserialize)]
pub(super) struct FinishedRow {
    pub(super) task_id: Uuid,
    pub(super) state: TaskState,
}

#[derive(serde::Deserialize)]
struct RetryRow {
    step_id: Uuid,
    delay_ms: u64,
}

impl Store {
    /// Applies a batch of results the orchestrator itself decided (a step it failed), which
    /// may move a step of any namespace, in one statement (`tasker_apply_results`, one round
    /// trip and one commit), retrying it as a whole on a deadlock.
    pub async fn apply_results<R: Serialize + Sync>(&self, results: &[R]) -> Result<Effects> {
        let mut conn = self.pool.acquire().await?;
        apply_results_on(&mut conn, results, None).await
    }

    /// After a commit that counted a large fan-out's results on tallies: folds the tallies of
    /// tasks `task_ids` that may hold their last counts and runs or completes what they
    /// resolved (`tasker_settle`). Effects with no `results`: it applied none.
    pub async fn settle(&self, task_ids: &[Uuid]) -> Result<Effects> {
        let mut conn = self.pool.acquire().await?;
        let task_ids: std::sync::Arc<[Uuid]> = task_ids.into();
        let text: String = retry_deadlocks(&mut conn, |conn| {
            let task_ids = task_ids.clone();
            Box::pin(async move {
                Ok(sqlx::query_scalar("SELECT tasker_settle($1)::text")
                    .bind(&*task_ids)
                    .fetch_one(conn)
                    .await?)
            })
        })
        .await?;
        let mut effects = parse_applied(&text)?;
        effects.results = None;
        Ok(effects)
    }

    /// The tasks with counts on tallies that no check after a commit has folded yet (an
    /// orchestrator stopped in between), for the sweeper to settle.
    pub async fn unsettled(&self, limit: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            // From the tallies, a row looked up by key for each (never a scan of the steps:
            // this runs at every sweep).
            "SELECT t.task_id FROM task_tallies t
             JOIN LATERAL (SELECT state FROM tasks WHERE id = t.task_id OFFSET 0) k ON true
             WHERE t.n > 0 AND k.state = 'running'
             UNION SELECT t.task_id FROM step_tallies t
             JOIN LATERAL (SELECT state FROM steps WHERE id = t.step_id OFFSET 0) s ON true
             WHERE t.n > 0 AND s.state = 'pending'
             LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// A connection of this store's pool kept for a caller that runs one statement after
    /// another ([`Held`]).
    pub fn held(&self) -> Held {
        Held {
            pool: self.pool.clone(),
            conn: None,
        }
    }

    /// Moves steps whose backoff elapsed from `waiting_retry` to `enqueued` (next attempt).
    pub async fn dispatch_retries(&self, step_ids: &[Uuid]) -> Result<Effects> {
        let v: Value = sqlx::query_scalar("SELECT tasker_dispatch($1)")
            .bind(step_ids)
            .fetch_one(&self.pool)
            .await?;
        Ok(decode::<Dispatched>("tasker_dispatch", v)?.into())
    }

    /// The messages of enqueued steps (those dispatched with their messages deferred).
    pub async fn step_messages(&self, step_ids: &[Uuid]) -> Result<Vec<StepMessage>> {
        let text: String = sqlx::query_scalar("SELECT tasker_step_messages($1)::text")
            .bind(step_ids)
            .fetch_one(&self.pool)
            .await?;
        serde_json::from_str(&text).map_err(|source| Error::Answer {
            function: "tasker_step_messages",
            source,
        })
    }

    /// Hands enqueued steps this orchestrator could not publish to the sweeper, as if their
    /// dispatcher had died.
    pub async fn release_steps(&self, step_ids: &[Uuid]) -> Result<()> {
        sqlx::query(
            "UPDATE steps SET dispatched_by = NULL
             WHERE id = ANY($1) AND state = 'enqueued' AND dispatched_by = tasker_orchestrator()",
        )
        .bind(step_ids)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// A connection kept out of the pool for one caller that runs its statements one after
/// another (the result processor, batch after batch): sqlx checks a pooled connection with a
/// round trip to PostgreSQL when it is taken and again when it is given back, which at one
/// result a batch were two of the three round trips a batch made. After a failure to reach
/// the database the connection goes back to the pool (which checks it) and the next statement
/// takes another.
#[derive(Debug)]
pub struct Held {
    pool: PgPool,
    conn: Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
}

impl Held {
    /// Applies results received from workers on the held connection; `permits[i]` says which
    /// namespaces the sender of `results[i]` may serve (`None`: any), and a result outside them
    /// is rejected ([`ResultCounts::rejected`]).
    pub async fn apply_results<R: Serialize + Sync>(
        &mut self,
        results: &[R],
        permits: &[Option<std::sync::Arc<str>>],
    ) -> Result<Effects> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(self.pool.acquire().await?),
        };
        let applied = apply_results_on(conn, results, Some(permits)).await;
        if let Err(Error::Unavailable(_)) = &applied {
            self.conn = None;
        }
        applied
    }
}

/// `tasker_apply_results` on `conn`, retried as a whole on a deadlock.
async fn apply_results_on<R: Serialize + Sync>(
    conn: &mut sqlx::PgConnection,
    results: &[R],
    permits: Option<&[Option<std::sync::Arc<str>>]>,
) -> Result<Effects> {
    // Every result's permit, or none at all when no result is limited (the common case: one
    // parameter less to send and check).
    let permits: Option<std::sync::Arc<Vec<Option<String>>>> = permits
        .filter(|p| p.iter().any(Option::is_some))
        .map(|p| std::sync::Arc::new(p.iter().map(|x| x.as_deref().map(str::to_owned)).collect()));
    // As text, decoded straight into the answer's types: a large fan-out's answer never
    // becomes a generic JSON tree in memory.
    // Encoded once; a retry shares it instead of copying it.
    let batch: std::sync::Arc<str> = serde_json::to_string(results)
        .map_err(Error::Encode)?
        .into();
    let text: String = retry_deadlocks(conn, |conn| {
        let (batch, permits) = (batch.clone(), permits.clone());
        Box::pin(async move {
            Ok(
                sqlx::query_scalar("SELECT tasker_apply_results($1::jsonb, $2)::text")
                    .bind(&*batch)
                    .bind(permits.as_deref())
                    .fetch_one(conn)
                    .await?,
            )
        })
    })
    .await?;
    parse_applied(&text)
}

/// The answer of `tasker_apply_results` (or `tasker_applied`) as [`Effects`].
pub(super) fn parse_applied(text: &str) -> Result<Effects> {
    let row: AppliedRow = serde_json::from_str(text).map_err(|source| Error::Answer {
        function: "tasker_apply_results",
        source,
    })?;
    let mut effects = Effects::from(row.dispatch);
    effects.retries = row
        .retries
        .into_iter()
        .map(|r| (r.step_id, Duration::from_millis(r.delay_ms)))
        .collect();
    effects.finished = row
        .finished
        .into_iter()
        .map(|f| (f.task_id, f.state))
        .collect();
    effects.tallied = row.tallied;
    effects.results = Some(ResultCounts {
        accepted: row.accepted,
        ignored: row.ignored,
        rejected: row
            .rejected
            .into_iter()
            .map(|r| Rejected {
                index: r.i.saturating_sub(1),
                code: r.code,
                detail: r.detail,
            })
            .collect(),
    });
    Ok(effects)
}
