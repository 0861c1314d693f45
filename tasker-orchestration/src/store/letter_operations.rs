//! Operations by filter over dead letters (migration 0024): `replay` and `discard`. The dead
//! letters a filter matches are written down when the operation starts; each one's outcome is
//! recorded in the transaction that acts on it (a discard, or a replay's delete once the broker
//! took the message), so an operation taken over after its orchestrator died acts on each once.

use std::future::Future;

use sqlx::postgres::PgArguments;
use uuid::Uuid;

use tasker_shared::api::OperationFilter;

use super::batch::{Batch, bind};
use super::dead_letters::COLUMNS;
use super::{DeadLetter, Result, Store};

/// The `FROM … WHERE` of the dead letters `f` matches within `covers` (a token's namespaces as
/// a regular expression: only dead letters whose every entry names a task of them), with its
/// seven arguments (`$1` to `$7`).
pub(super) fn matching(f: &OperationFilter, covers: Option<&str>) -> (String, PgArguments) {
    let mut args = PgArguments::default();
    bind(&mut args, f.namespace.as_deref());
    bind(&mut args, f.queue.as_deref());
    bind(&mut args, f.reason.as_deref());
    bind(&mut args, f.created_after);
    bind(&mut args, f.created_before);
    bind(&mut args, f.dead_letters.clone());
    bind(&mut args, covers.map(str::to_owned));
    let sql = format!(
        "FROM dead_letters d
         WHERE ($1::text IS NULL OR $1 = ANY (d.namespaces))
           AND ($2::text IS NULL OR d.queue = $2)
           AND ($3::text IS NULL OR starts_with(d.reason, $3))
           AND ($4::timestamptz IS NULL OR d.first_seen >= $4)
           AND ($5::timestamptz IS NULL OR d.first_seen < $5)
           AND ($6::bigint[] IS NULL OR d.id = ANY ($6))
           AND {}",
        covered("$7")
    );
    (sql, args)
}

/// The condition that dead letter `d` is within the namespaces of regular expression `regex`
/// (a parameter; NULL: every dead letter, those that name no task too).
fn covered(regex: &str) -> String {
    format!(
        "({regex}::text IS NULL
          OR (d.namespaces IS NOT NULL
              AND NOT EXISTS (SELECT FROM unnest(d.namespaces) AS n(ns) WHERE n.ns !~ {regex})))"
    )
}

/// What one replay in an operation did ([`Store::replay_in_operation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// Sent back and removed.
    Replayed,
    /// Left, with the outcome now recorded (`gone`, `forbidden`, `not_replayable`).
    Left(String),
    /// Already acted on (or not the operation's): nothing done.
    Done,
    /// The operation is no longer running (cancelled, failed): nothing done.
    Stopped(String),
}

impl Store {
    /// How many dead letters `f` matches, and the newest ten.
    pub async fn count_dead_letters(
        &self,
        f: &OperationFilter,
        covers: Option<&str>,
    ) -> Result<(u64, Vec<i64>)> {
        let (from, args) = matching(f, covers);
        let count: i64 = sqlx::query_scalar_with(&format!("SELECT count(*) {from}"), args)
            .fetch_one(self.pool())
            .await?;
        let (from, args) = matching(f, covers);
        let sample = sqlx::query_scalar_with(
            &format!("SELECT d.id {from} ORDER BY d.id DESC LIMIT 10"),
            args,
        )
        .fetch_all(self.pool())
        .await?;
        Ok((u64::try_from(count).unwrap_or(0), sample))
    }

    /// The dead letters of operation `id` not yet acted on, the first `n`.
    pub async fn dead_letters_left(&self, id: Uuid, n: usize) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT dead_letter_id FROM operation_dead_letters
             WHERE operation_id = $1 AND outcome IS NULL ORDER BY dead_letter_id LIMIT $2",
        )
        .bind(id)
        .bind(i64::try_from(n).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await?)
    }

    /// Discards the next `n` dead letters of operation `id` within `covers`, recording each
    /// one's outcome (`discarded`, `gone`, `forbidden`) with it, in one transaction.
    pub async fn discard_batch(&self, id: Uuid, n: usize, covers: Option<&str>) -> Result<Batch> {
        let mut tx = self.pool.begin().await?;
        let state = lock(&mut tx, id).await?;
        if state != "running" {
            return Ok(Batch {
                state,
                ..Batch::default()
            });
        }
        let outcomes: Vec<String> = sqlx::query_scalar(&format!(
            "WITH todo AS (
                 SELECT dead_letter_id AS id FROM operation_dead_letters
                 WHERE operation_id = $1 AND outcome IS NULL ORDER BY dead_letter_id LIMIT $2
             ), gone AS (
                 DELETE FROM dead_letters d USING todo WHERE d.id = todo.id AND {}
                 RETURNING d.id
             ), seen AS (
                 SELECT todo.id, CASE WHEN g.id IS NOT NULL THEN 'discarded'
                                      WHEN d.id IS NULL THEN 'gone'
                                      ELSE 'forbidden' END AS outcome
                 FROM todo LEFT JOIN gone g ON g.id = todo.id
                           LEFT JOIN dead_letters d ON d.id = todo.id
             )
             UPDATE operation_dead_letters o SET outcome = seen.outcome FROM seen
             WHERE o.operation_id = $1 AND o.dead_letter_id = seen.id
             RETURNING o.outcome",
            covered("$3")
        ))
        .bind(id)
        .bind(i64::try_from(n).unwrap_or(i64::MAX))
        .bind(covers)
        .fetch_all(&mut *tx)
        .await?;
        let acted = outcomes.iter().filter(|o| *o == "discarded").count() as u64;
        let skipped = outcomes.len() as u64 - acted;
        let state = tally(&mut tx, id, acted, skipped).await?;
        tx.commit().await?;
        Ok(Batch {
            state,
            acted,
            skipped,
            ..Batch::default()
        })
    }

    /// Replays dead letter `letter` of operation `id`: in one transaction, the operation and
    /// the letter are locked, the letter is judged (gone; outside `covers`), handed to `send`
    /// (which publishes it), and removed with its outcome recorded once `send` succeeded. A
    /// `send` that fails with `Err(Some(why))` leaves it for good as `not_replayable`; with
    /// `Err(None)` (the broker) the transaction is undone and the error returned.
    pub async fn replay_in_operation<F, Fut>(
        &self,
        id: Uuid,
        letter: i64,
        covers: Option<&str>,
        send: F,
    ) -> Result<std::result::Result<Replay, String>>
    where
        F: FnOnce(DeadLetter) -> Fut,
        Fut: Future<Output = std::result::Result<(), Option<String>>>,
    {
        let mut tx = self.pool.begin().await?;
        let state = lock(&mut tx, id).await?;
        if state != "running" {
            return Ok(Ok(Replay::Stopped(state)));
        }
        let pending: Option<Option<String>> = sqlx::query_scalar(
            "SELECT outcome FROM operation_dead_letters
             WHERE operation_id = $1 AND dead_letter_id = $2 FOR UPDATE",
        )
        .bind(id)
        .bind(letter)
        .fetch_optional(&mut *tx)
        .await?;
        if !matches!(pending, Some(None)) {
            return Ok(Ok(Replay::Done));
        }
        let found: Option<(DeadLetter, bool)> = sqlx::query_as::<_, LetterRow>(&format!(
            "SELECT {COLUMNS}, body, headers, {} AS covered
             FROM dead_letters d WHERE id = $1 FOR UPDATE",
            covered("$2")
        ))
        .bind(letter)
        .bind(covers)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row: LetterRow| (row.letter, row.covered));
        let outcome = match found {
            None => "gone".to_owned(),
            Some((_, false)) => "forbidden".to_owned(),
            Some((letter_row, true)) => match send(letter_row).await {
                Ok(()) => {
                    sqlx::query("DELETE FROM dead_letters WHERE id = $1")
                        .bind(letter)
                        .execute(&mut *tx)
                        .await?;
                    "replayed".to_owned()
                }
                Err(Some(_why)) => "not_replayable".to_owned(),
                Err(None) => return Ok(Err("the broker did not take it".into())),
            },
        };
        sqlx::query(
            "UPDATE operation_dead_letters SET outcome = $3
             WHERE operation_id = $1 AND dead_letter_id = $2",
        )
        .bind(id)
        .bind(letter)
        .bind(&outcome)
        .execute(&mut *tx)
        .await?;
        let replayed = outcome == "replayed";
        tally(&mut tx, id, u64::from(replayed), u64::from(!replayed)).await?;
        tx.commit().await?;
        Ok(Ok(if replayed {
            Replay::Replayed
        } else {
            Replay::Left(outcome)
        }))
    }

    /// Operation `id`'s state (`failed` if it is gone), and keeps this orchestrator's lease on
    /// it for `lease` more while it runs.
    pub async fn hold_operation(&self, id: Uuid, lease: std::time::Duration) -> Result<String> {
        let state: Option<String> = sqlx::query_scalar(
            "UPDATE operations SET owner = CASE WHEN state = 'running' THEN $2 ELSE owner END,
                 lease_until = CASE WHEN state = 'running'
                     THEN clock_timestamp() + $3 * interval '1 millisecond' ELSE lease_until END
             WHERE id = $1 RETURNING state",
        )
        .bind(id)
        .bind(self.instance)
        .bind(lease.as_millis() as f64)
        .fetch_optional(self.pool())
        .await?;
        Ok(state.unwrap_or_else(|| "failed".into()))
    }
}

/// A dead letter read with whether the operation's token covers it.
#[derive(sqlx::FromRow)]
struct LetterRow {
    #[sqlx(flatten)]
    letter: DeadLetter,
    covered: bool,
}

/// Locks operation `id` for this transaction (a cancel waits for it); its state (`failed` if it
/// is gone).
async fn lock(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, id: Uuid) -> Result<String> {
    let state: Option<String> =
        sqlx::query_scalar("SELECT state FROM operations WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    Ok(state.unwrap_or_else(|| "failed".into()))
}

/// Adds a batch's counts to operation `id` and completes it when nothing is left; its state.
async fn tally(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: Uuid,
    acted: u64,
    skipped: u64,
) -> Result<String> {
    Ok(sqlx::query_scalar(
        "UPDATE operations SET acted = acted + $2, skipped = skipped + $3,
             updated_at = clock_timestamp(),
             state = CASE WHEN EXISTS (SELECT 1 FROM operation_dead_letters
                                       WHERE operation_id = $1 AND outcome IS NULL)
                          THEN state ELSE 'complete' END,
             finished_at = CASE WHEN EXISTS (SELECT 1 FROM operation_dead_letters
                                             WHERE operation_id = $1 AND outcome IS NULL)
                                THEN finished_at ELSE clock_timestamp() END
         WHERE id = $1 RETURNING state",
    )
    .bind(id)
    .bind(i64::try_from(acted).unwrap_or(i64::MAX))
    .bind(i64::try_from(skipped).unwrap_or(i64::MAX))
    .fetch_one(&mut **tx)
    .await?)
}
