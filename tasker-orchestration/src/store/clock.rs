//! The engine's clock. Every time a workflow runs by is read from `tasker_now()` or
//! `tasker_clock()` (migration 0035): `now()` and `clock_timestamp()` in production, inlined
//! by the planner. In test mode ([`Store::use_test_clock`]) both are replaced by the same
//! clocks moved forward by `tasker_test_clock.skew`, which a test advances by a duration or
//! skips to the next timer. The few times the orchestrator computes in Rust (a task's start
//! after `delay`, a rate limit's pause) read [`EngineClock::now`], which carries the same skew.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};

use tasker_shared::api::{Clock, Skipped};

use super::{Result, Store};

/// The clock as the orchestrator's Rust code reads it; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct EngineClock {
    skew_ms: Arc<AtomicI64>,
    test: Arc<AtomicBool>,
}

impl EngineClock {
    /// The engine's time: the wall clock, plus a test's skew in test mode.
    pub fn now(&self) -> DateTime<Utc> {
        match self.skew_ms.load(Ordering::Relaxed) {
            0 => Utc::now(),
            ms => Utc::now() + chrono::Duration::milliseconds(ms),
        }
    }

    /// Whether a test may move it.
    pub fn is_test(&self) -> bool {
        self.test.load(Ordering::Relaxed)
    }

    fn set(&self, skew_ms: i64) {
        self.skew_ms.store(skew_ms, Ordering::Relaxed);
    }
}

/// The test mode's clocks: production's plus the skew (never inlined: they read a table).
const TEST_FUNCTIONS: &str = "
CREATE OR REPLACE FUNCTION tasker_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT now() + (SELECT skew FROM tasker_test_clock WHERE id = 1) $$;
CREATE OR REPLACE FUNCTION tasker_clock() RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE
    AS $$ SELECT clock_timestamp() + (SELECT skew FROM tasker_test_clock WHERE id = 1) $$;
INSERT INTO tasker_test_clock DEFAULT VALUES ON CONFLICT (id) DO NOTHING;";

/// The earliest timer of the engine, and whether a step is with a worker: sent (`enqueued`)
/// and neither a wait nor a child step, which the orchestrator holds itself.
const TIMERS: &str = "
    (SELECT min(at) FROM (
        SELECT min(wake_at) FROM steps WHERE state = 'enqueued' AND wake_at IS NOT NULL
        UNION ALL SELECT min(next_attempt_at) FROM steps WHERE state = 'waiting_retry'
        UNION ALL SELECT min(next_attempt_at) FROM steps
                  WHERE state = 'throttled' AND next_attempt_at IS NOT NULL
        UNION ALL SELECT min(run_at) FROM tasks WHERE state = 'scheduled'
        UNION ALL SELECT min(deadline_at) FROM tasks
                  WHERE state = 'running' AND deadline_at IS NOT NULL
        UNION ALL SELECT min(next_fire_at) FROM schedules WHERE NOT paused
     ) t(at)) AS next_timer,
    EXISTS (SELECT 1 FROM steps WHERE state = 'enqueued' AND step_type NOT IN ('wait', 'child'))
        AS busy";

#[derive(sqlx::FromRow)]
struct ClockRow {
    now: DateTime<Utc>,
    skew_ms: i64,
    next_timer: Option<DateTime<Utc>>,
    busy: bool,
}

impl Store {
    /// The engine's clock as this store's Rust code reads it.
    pub fn clock(&self) -> &EngineClock {
        &self.clock
    }

    /// Test mode: the engine's clocks carry `tasker_test_clock`'s skew from now on, in this
    /// database (a test's own: never a shared one). The skew a previous start left is kept.
    pub async fn use_test_clock(&self) -> Result<()> {
        sqlx::raw_sql(TEST_FUNCTIONS).execute(&self.pool).await?;
        self.clock.test.store(true, Ordering::Relaxed);
        self.clock_state().await.map(|_| ())
    }

    /// The clock now, with the next timer.
    pub async fn clock_state(&self) -> Result<Clock> {
        let row: ClockRow = sqlx::query_as(&format!(
            "SELECT tasker_clock() AS now,
                    COALESCE((SELECT (extract(epoch FROM skew) * 1000)::bigint
                              FROM tasker_test_clock WHERE id = 1), 0) AS skew_ms,
                    {TIMERS}"
        ))
        .fetch_one(&self.pool)
        .await?;
        Ok(self.answer(row))
    }

    /// Moves the clock forward by `by` (test mode only: the caller checks).
    pub async fn advance_clock(&self, by: Duration) -> Result<Clock> {
        sqlx::query("UPDATE tasker_test_clock SET skew = skew + make_interval(secs => $1)")
            .bind(by.as_secs_f64())
            .execute(&self.pool)
            .await?;
        self.clock_state().await
    }

    /// Moves the clock to the next timer when no step is with a worker and that timer is
    /// ahead (test mode only: the caller checks).
    pub async fn skip_clock(&self) -> Result<Skipped> {
        let mut tx = self.pool.begin().await?;
        // One skip at a time: two callers never both add the same gap.
        sqlx::query("SELECT 1 FROM tasker_test_clock WHERE id = 1 FOR UPDATE")
            .execute(&mut *tx)
            .await?;
        let skipped: bool = sqlx::query_scalar(&format!(
            "WITH c AS (SELECT {TIMERS})
             UPDATE tasker_test_clock SET skew = skew + (c.next_timer - tasker_clock())
             FROM c WHERE id = 1 AND NOT c.busy AND c.next_timer > tasker_clock()
             RETURNING true"
        ))
        .fetch_optional(&mut *tx)
        .await?
        .unwrap_or(false);
        tx.commit().await?;
        Ok(Skipped {
            skipped,
            clock: self.clock_state().await?,
        })
    }

    fn answer(&self, row: ClockRow) -> Clock {
        let test_clock = self.clock.is_test();
        if test_clock {
            self.clock.set(row.skew_ms);
        }
        Clock {
            now: row.now,
            skew_ms: if test_clock { row.skew_ms } else { 0 },
            test_clock,
            next_timer: row.next_timer,
            busy: row.busy,
        }
    }
}
