//! Retention: every `retention.interval_ms` an orchestrator purges the finished tasks older
//! than their state's retention, a batch (`retention.batch` tasks) per transaction with a pause
//! between full batches (`retention.pause_ms`, or as long as the batch took if longer), so a
//! backlog drains beside the load rather than ahead of it. One orchestrator purges at a time (the others find it busy and wait for their
//! next interval). `POST /v1/purge` runs the same batches on request. Expired tombstones go
//! in the same pass, and so do the audit log's rows older than `retention.audit` and the events
//! older than `retention.events`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use tasker_shared::TaskState;

use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{PurgeBatch, Store};

/// Tombstones forgotten per statement.
const TOMBSTONE_BATCH: u32 = 10_000;

/// The cut-offs of a policy at `now`: each state kept for a duration, with its
/// completion-time bound (states kept forever left out).
pub(crate) fn cutoffs(
    policy: &[(TaskState, Option<Duration>)],
    now: DateTime<Utc>,
) -> Vec<(TaskState, DateTime<Utc>)> {
    policy
        .iter()
        .filter_map(|&(state, keep)| {
            let keep = chrono::Duration::from_std(keep?).ok()?;
            Some((state, now - keep))
        })
        .collect()
}

/// What batches of a purge removed together.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub batch: PurgeBatch,
    /// Batches that found another purge under way.
    pub busy: bool,
}

impl Totals {
    fn add(&mut self, b: PurgeBatch) {
        self.batch.tasks += b.tasks;
        self.batch.bytes += b.bytes;
        for (k, n) in b.by_state {
            *self.batch.by_state.entry(k).or_default() += n;
        }
        for (k, n) in b.rows {
            *self.batch.rows.entry(k).or_default() += n;
        }
    }
}

/// How fast a purge goes (`retention.batch`, `pause_ms`, `busy_percent`): the policy's passes
/// and purges on request alike.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    batch: u32,
    pause: Duration,
    busy_percent: u32,
}

impl Pace {
    pub(crate) fn of(r: &tasker_shared::config::RetentionConfig) -> Pace {
        Pace {
            batch: r.batch as u32,
            pause: Duration::from_millis(r.pause_ms),
            // Validated when the configuration loaded (1 to 100).
            busy_percent: u32::from(r.busy_percent.clamp(1, 100)),
        }
    }

    /// The pause after a full batch that took `took`: the purge spends at most `busy_percent`
    /// of its time deleting, and pauses at least `pause`.
    fn rest(&self, took: Duration) -> Duration {
        self.pause
            .max(took * (100 - self.busy_percent) / self.busy_percent)
    }
}

/// Purges up to `limit` tasks by `cutoffs` in batches, pausing between full batches as `pace`
/// says: a purge holds the database a bounded share of the time, however loaded it is (a slow
/// batch makes a longer pause). One pass at a time cluster-wide, pauses included:
/// with `wait`, a pass under way elsewhere is waited for; without, this one ends at once
/// (`busy`). Stops early when `cancel` fires.
pub(crate) async fn purge(
    store: &Store,
    cutoffs: &[(TaskState, DateTime<Utc>)],
    limit: u64,
    pace: Pace,
    wait: bool,
    cancel: &CancellationToken,
) -> crate::store::Result<Totals> {
    let mut totals = Totals::default();
    if cutoffs.is_empty() {
        return Ok(totals);
    }
    let Some(mut session) = store.purge_session(wait).await? else {
        totals.busy = true;
        return Ok(totals);
    };
    let mut left = limit;
    let mut failed = None;
    while left > 0 && !cancel.is_cancelled() {
        let asked = left.min(u64::from(pace.batch)) as u32;
        let started = std::time::Instant::now();
        let done = match session.batch(cutoffs, asked).await {
            Ok(done) => done,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        let took = started.elapsed();
        record(&done, took);
        let full = done.tasks >= u64::from(asked);
        left -= done.tasks.min(left);
        totals.add(done);
        if !full || left == 0 {
            break;
        }
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(pace.rest(took)) => {}
        }
    }
    session.end().await;
    match failed {
        Some(e) => Err(e),
        None => Ok(totals),
    }
}

/// Audit rows deleted per transaction, for each task of `retention.batch`: an audit row is
/// one small row, a task about eighteen.
const AUDIT_ROWS_PER_TASK: u32 = 10;

/// How long each log is kept (`None`: forever): the audit log (and the operations by filter
/// that ended as long ago), and the events.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Logs {
    pub audit: Option<Duration>,
    pub events: Option<Duration>,
}

/// Deletes the audit rows, the operations by filter and the events older than `keep` says, at
/// `pace` (batches of ten times its tasks), one pass at a time cluster-wide like the tasks' (a
/// pass under way elsewhere: nothing now). Returns how many rows.
pub(crate) async fn purge_logs(
    store: &Store,
    keep: Logs,
    pace: Pace,
    cancel: &CancellationToken,
) -> crate::store::Result<u64> {
    let Some(mut session) = store.purge_session(false).await? else {
        return Ok(0);
    };
    let batch = pace.batch.saturating_mul(AUDIT_ROWS_PER_TASK);
    let mut total = 0;
    let outcome = loop {
        if cancel.is_cancelled() {
            break Ok(total);
        }
        let started = std::time::Instant::now();
        let mut full = false;
        let mut rows = |table: &'static str, done: u64| {
            ::metrics::counter!(m::PURGED_ROWS.name, "table" => table).increment(done);
            total += done;
            full |= done >= u64::from(batch);
        };
        if let Some(keep) = keep.audit {
            match session.audit(keep, batch).await {
                Ok(done) => rows("audit_log", done),
                Err(e) => break Err(e),
            }
            // Operations by filter that ended as long ago go with them.
            match session.operations(keep, batch).await {
                Ok(done) => rows("operations", done),
                Err(e) => break Err(e),
            }
        }
        if let Some(keep) = keep.events {
            match session.events(keep, batch).await {
                Ok(done) => rows("events", done),
                Err(e) => break Err(e),
            }
        }
        if !full {
            break Ok(total);
        }
        tokio::select! {
            () = cancel.cancelled() => break Ok(total),
            () = tokio::time::sleep(pace.rest(started.elapsed())) => {}
        }
    };
    session.end().await;
    outcome
}

fn record(b: &PurgeBatch, took: Duration) {
    if b.tasks == 0 {
        return;
    }
    ::metrics::histogram!(m::PURGE_BATCH.name).record(took.as_secs_f64());
    for (state, n) in &b.by_state {
        ::metrics::counter!(m::PURGED_TASKS.name, "state" => state.clone()).increment(*n);
    }
    for (table, n) in &b.rows {
        ::metrics::counter!(m::PURGED_ROWS.name, "table" => table.clone()).increment(*n);
    }
    ::metrics::counter!(m::PURGED_BYTES.name).increment(b.bytes);
}

/// The retention loop of an orchestrator.
pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    let r = &shared.config.retention;
    // Validated when the configuration loaded.
    let policy = r.policy().unwrap_or_default();
    let tombstones = r.tombstones().ok().flatten();
    let logs = Logs {
        audit: r.audit().ok().flatten(),
        events: r.events().ok().flatten(),
    };
    let mut tick = tokio::time::interval(Duration::from_millis(r.interval_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = Utc::now();
        let cut = cutoffs(&policy, now);
        match purge(&shared.store, &cut, u64::MAX, Pace::of(r), false, &cancel).await {
            Ok(t) if t.batch.tasks > 0 => tracing::info!(
                tasks = t.batch.tasks,
                bytes = t.batch.bytes,
                "retention: purged finished tasks"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "retention: purging finished tasks failed"),
        }
        if let Some(keep) = tombstones.and_then(|k| chrono::Duration::from_std(k).ok()) {
            loop {
                match shared
                    .store
                    .expire_tombstones(now - keep, TOMBSTONE_BATCH)
                    .await
                {
                    Ok(n) if n == u64::from(TOMBSTONE_BATCH) && !cancel.is_cancelled() => {}
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "retention: forgetting old tombstones failed");
                        break;
                    }
                }
            }
        }
        expire_start_controls(&shared.store, &cancel).await;
        if logs.audit.is_some() || logs.events.is_some() {
            match purge_logs(&shared.store, logs, Pace::of(r), &cancel).await {
                Ok(0) => {}
                Ok(rows) => tracing::info!(rows, "retention: purged old audit rows and events"),
                Err(e) => {
                    tracing::warn!(error = %e, "retention: purging old audit rows and events failed")
                }
            }
        }
    }
}

/// Removes the dedupe windows past their time (their keys start new tasks again) and the
/// debounce bursts that ended over a day ago: not a retention policy, their own times.
async fn expire_start_controls(store: &Store, cancel: &CancellationToken) {
    loop {
        match store.purge_start_controls(i64::from(TOMBSTONE_BATCH)).await {
            Ok(n) => {
                ::metrics::counter!(m::PURGED_ROWS.name, "table" => "start_controls").increment(n);
                if n < u64::from(TOMBSTONE_BATCH) || cancel.is_cancelled() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "retention: expiring dedupe windows failed");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoffs_leave_out_states_kept_forever() {
        let now = Utc::now();
        let day = Duration::from_secs(86_400);
        let cut = cutoffs(
            &[
                (TaskState::Complete, Some(day)),
                (TaskState::Error, None),
                (TaskState::Cancelled, Some(2 * day)),
            ],
            now,
        );
        assert_eq!(
            cut,
            vec![
                (TaskState::Complete, now - chrono::Duration::days(1)),
                (TaskState::Cancelled, now - chrono::Duration::days(2)),
            ]
        );
    }

    #[test]
    fn a_purge_rests_in_proportion_to_its_batches() {
        let pace = |pause_ms, busy_percent| Pace {
            batch: 200,
            pause: Duration::from_millis(pause_ms),
            busy_percent,
        };
        let ms = Duration::from_millis;
        // 10% busy: a 50 ms batch, then 450 ms of rest; a batch that took 1 s, 9 s.
        assert_eq!(pace(100, 10).rest(ms(50)), ms(450));
        assert_eq!(pace(100, 10).rest(ms(1000)), ms(9000));
        // Never less than pause_ms; 100% busy rests only that.
        assert_eq!(pace(100, 50).rest(ms(20)), ms(100));
        assert_eq!(pace(0, 100).rest(ms(500)), ms(0));
    }
}
