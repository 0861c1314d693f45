//! Schedules at work: a fire (with its overlap policy and catch-up window), a trigger by hand, a
//! backfill. No leader: every orchestrator's timer fires what is due; a fire locks its
//! schedule's row, skipping one another orchestrator holds, and commits its task together with
//! the advance of the schedule (see `store::schedules`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use tasker_shared::time::{Cron, Overlap};

use crate::catalog::Entry;
use crate::effects::Effects;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{self, Fire, NewTask, ScheduleRow, ScheduleTx};

/// Schedules looked at per pass.
const PASS_LIMIT: i64 = 500;

/// The idempotency key of the task a schedule starts for a nominal time: the same for a fire,
/// a catch-up and a backfill of that time, so each time has one task.
pub fn fire_key(schedule: Uuid, nominal: DateTime<Utc>) -> String {
    format!(
        "schedule:{schedule}:{}",
        nominal.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// How soon a schedule that is still behind (a catch-up) fires its next missed time: one fire
/// after another, never a burst.
const CATCH_UP_PACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Fires every schedule due now, each in its own transaction (one that fails does not stop
/// the others). Returns what the fires left to do, with the alarm armed for the next fire.
pub async fn fire_due(shared: &Shared) -> Result<Effects, store::Error> {
    let mut effects = Effects::default();
    let mut soonest: Option<(DateTime<Utc>, DateTime<Utc>)> = None;
    for id in shared.store.due_schedules(PASS_LIMIT).await? {
        match fire_one(shared, id).await {
            Ok((fx, next, now)) => {
                effects.merge(fx);
                if let Some(next) = next
                    && soonest.is_none_or(|(s, _)| next < s)
                {
                    soonest = Some((next, now));
                }
            }
            Err(e) => {
                tracing::warn!(schedule = %id, error = %e, "schedule fire failed; retried at the next tick")
            }
        }
    }
    if let Some((next, now)) = soonest {
        // A fire still behind (catching up) comes at the pace, not at once.
        effects
            .alarms
            .push((next - now).to_std().unwrap_or(CATCH_UP_PACE));
    }
    Ok(effects)
}

/// How long a schedule that is behind (its next fire already due) waits before its next fire:
/// what is left of the pace since its last fire's task was created; `None` when it may fire.
fn catch_up_wait(tx: &ScheduleTx) -> Option<chrono::Duration> {
    let last = tx.last_fired?;
    let pace = chrono::Duration::from_std(CATCH_UP_PACE).ok()?;
    let behind = tx.row.next_fire_at.is_some_and(|n| n <= tx.now);
    let since = tx.now - last;
    (behind && since < pace).then(|| pace - since.max(chrono::Duration::zero()))
}

/// One pass over one schedule: skips what is outside its catch-up window, fires at most one
/// nominal time (and a buffered one whose task ended), and advances it. Returns what that left
/// to do, the schedule's next fire time and the database's clock.
async fn fire_one(
    shared: &Shared,
    id: Uuid,
) -> Result<(Effects, Option<DateTime<Utc>>, DateTime<Utc>), store::Error> {
    let Some(mut tx) = shared.store.schedule_tx(id).await? else {
        return Ok((Effects::default(), None, shared.store.clock().now()));
    };
    let row = tx.row.clone();
    let now = tx.now;
    if let Some(wait) = catch_up_wait(&tx) {
        // Behind, and fired moments ago: whatever rang the timer (a sweep, a freed slot, another
        // orchestrator's pass), the next missed time comes at the pace.
        return Ok((Effects::default(), Some(now + wait), now));
    }
    let mut fire = Fire {
        next_fire_at: row.next_fire_at,
        buffered_at: row.buffered_at,
        ..Fire::default()
    };
    let Ok((cron, catch_up)) = row.spec().check() else {
        // A definition that no longer parses (a time zone gone from the database): stop it
        // rather than fail at every tick.
        tracing::warn!(schedule = %format!("{}/{}", row.namespace, row.name), "invalid schedule; no further fires");
        fire.next_fire_at = None;
        tx.finish(&fire).await?;
        return Ok((Effects::default(), None, now));
    };
    if let Some(why) = refused(shared, &row).await? {
        // The token that saved it may no longer start its tasks: no fire until someone whose
        // token may resumes it.
        tracing::warn!(schedule = %format!("{}/{}", row.namespace, row.name), reason = %why,
            "schedule paused");
        skip(&mut fire, "token");
        fire.pause = Some(format!("paused by the orchestrator: {why}"));
        tx.finish(&fire).await?;
        return Ok((Effects::default(), None, now));
    }
    let overlap = Overlap::parse(&row.overlap).unwrap_or_default();
    let open = match row.last_task_id {
        Some(last) if overlap != Overlap::Allow => tx.task_open(last).await?,
        _ => false,
    };
    let mut effects = Effects::default();
    let mut due_nominal = None;
    // A buffered fire goes first, once the task it waited for has ended.
    if let Some(buffered) = row.buffered_at
        && !open
    {
        due_nominal = Some(buffered);
        fire.buffered_at = None;
    }
    if let Some(next) = row.next_fire_at {
        let due = cron.due(next, now, catch_up);
        if due.skipped > 0 {
            ::metrics::counter!(m::SCHEDULE_SKIPS.name, "reason" => "catch_up")
                .increment(due.skipped);
            fire.skipped += due.skipped as i64;
        }
        fire.next_fire_at = due.next;
        if let Some(nominal) = due.fire {
            match (overlap, open, due_nominal) {
                // A buffered fire starts now: this one waits behind it, or is skipped.
                (Overlap::BufferOne, _, Some(_)) => fire.buffered_at = Some(nominal),
                (_, _, Some(_)) | (Overlap::Skip, true, None) => skip(&mut fire, "overlap"),
                (Overlap::BufferOne, true, None) if fire.buffered_at.is_none() => {
                    fire.buffered_at = Some(nominal);
                }
                (Overlap::BufferOne, true, None) => skip(&mut fire, "overlap"),
                (Overlap::CancelPrevious, true, None) => {
                    if let Some(last) = row.last_task_id {
                        tx.cancel_task(
                            last,
                            &format!("cancelled by schedule {}: a new fire", row.name),
                        )
                        .await?;
                        effects
                            .finished
                            .push((last, tasker_shared::TaskState::Cancelled));
                    }
                    due_nominal = Some(nominal);
                }
                _ => due_nominal = Some(nominal),
            }
        }
    }
    if let Some(nominal) = due_nominal {
        match start(shared, &mut tx, &row, nominal, None, row.token_id).await? {
            Some((task, fx)) => {
                fire.fired = Some((task, nominal));
                effects.merge(fx);
                let late = (now - nominal).to_std().unwrap_or_default();
                ::metrics::histogram!(m::SCHEDULE_LATENESS.name).record(late.as_secs_f64());
                ::metrics::counter!(m::SCHEDULE_FIRES.name, "how" => "fire").increment(1);
            }
            None => skip(&mut fire, "template"),
        }
    }
    tx.finish(&fire).await?;
    Ok((effects, fire.next_fire_at, now))
}

/// Why the token that saved the schedule may not start its tasks now (revoked, expired, or no
/// longer covering a namespace they reach); `None`: it may. A template gone from the registry
/// is the fire's own skip, not this.
async fn refused(shared: &Shared, row: &ScheduleRow) -> Result<Option<String>, store::Error> {
    let Some(id) = row.token_id else {
        return Ok(None);
    };
    let Some(entry) = shared
        .catalog
        .get(&row.namespace, &row.template, row.version.as_deref())
        .await?
    else {
        return Ok(None);
    };
    let judged =
        crate::reach::Reach::judge_saved(&shared.catalog, &shared.store, &entry.loaded, Some(id))
            .await?;
    Ok(judged.err())
}

fn skip(fire: &mut Fire, reason: &'static str) {
    ::metrics::counter!(m::SCHEDULE_SKIPS.name, "reason" => reason).increment(1);
    fire.skipped += 1;
}

/// The template a schedule starts, checked against its context; `None` (logged) if it is not
/// registered or refuses the context.
/// A schedule's template with its child templates pinned.
struct Source {
    entry: std::sync::Arc<Entry>,
    children: Vec<Option<serde_json::Value>>,
}

async fn template_of(shared: &Shared, row: &ScheduleRow) -> Result<Option<Source>, store::Error> {
    let entry = shared
        .catalog
        .get(&row.namespace, &row.template, row.version.as_deref())
        .await?;
    let key = format!("{}/{}", row.namespace, row.name);
    match entry {
        None => {
            tracing::warn!(schedule = %key, template = %row.template, "the schedule's template is not registered; fire skipped");
            Ok(None)
        }
        Some(e) if e.loaded.check_context(&row.context).is_err() => {
            tracing::warn!(schedule = %key, "the schedule's context does not match its template's schema; fire skipped");
            Ok(None)
        }
        Some(entry) => match shared.catalog.pin_children(&entry.loaded).await {
            Ok(children) => Ok(Some(Source { entry, children })),
            Err(crate::catalog::PinError::Store(e)) => Err(e),
            Err(e) => {
                tracing::warn!(schedule = %key, error = %e, "fire skipped");
                Ok(None)
            }
        },
    }
}

/// Creates the task of `nominal` in `tx` (idempotent by [`fire_key`], unless `key` is given).
async fn start(
    shared: &Shared,
    tx: &mut ScheduleTx,
    row: &ScheduleRow,
    nominal: DateTime<Utc>,
    key: Option<String>,
    token_id: Option<i64>,
) -> Result<Option<(Uuid, Effects)>, store::Error> {
    let Some(source) = template_of(shared, row).await? else {
        return Ok(None);
    };
    let key = key.unwrap_or_else(|| fire_key(row.id, nominal));
    let created = match tx.create_task(new_task(&source, row, key, token_id)).await {
        Ok(created) => created,
        // The schedule's context lacks a key its template's limits read: no fire can succeed.
        Err(store::Error::Limits(e)) => {
            tracing::warn!(schedule = %row.id, error = %e, "fire skipped");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    Ok(Some((created.task_id, created.effects)))
}

/// The task a schedule starts: its template, its context, the fire's idempotency key, the
/// token it is started for (the schedule's, or the caller's of a trigger or a backfill).
fn new_task<'a>(
    source: &'a Source,
    row: &ScheduleRow,
    key: String,
    token_id: Option<i64>,
) -> NewTask<'a> {
    NewTask {
        template_id: source.entry.id,
        template: &source.entry.loaded,
        context: row.context.clone(),
        idempotency_key: Some(key),
        run_at: None,
        children: source.children.clone(),
        parent: None,
        priority: source.entry.loaded.template.priority.unwrap_or_default(),
        token_id,
        controls: Default::default(),
        deadline: None,
    }
}

/// Starts a task of the schedule now, whatever its overlap policy ("trigger now"). Returns the
/// task, or `None` if the schedule or its template is missing.
pub async fn trigger(
    shared: &Shared,
    row: &ScheduleRow,
    token_id: Option<i64>,
) -> Result<Option<(Uuid, Effects)>, store::Error> {
    let Some(mut tx) = shared.store.schedule_tx_any(row.id).await? else {
        return Ok(None);
    };
    let now = tx.now;
    let key = format!("schedule:{}:trigger:{}", row.id, Uuid::now_v7());
    let Some((task, fx)) = start(shared, &mut tx, row, now, Some(key), token_id).await? else {
        return Ok(None);
    };
    let fire = Fire {
        next_fire_at: tx.row.next_fire_at,
        buffered_at: tx.row.buffered_at,
        skipped: 0,
        fired: Some((task, now)),
        pause: None,
    };
    tx.finish(&fire).await?;
    ::metrics::counter!(m::SCHEDULE_FIRES.name, "how" => "trigger").increment(1);
    Ok(Some((task, fx)))
}

/// Most fire times one backfill covers.
pub const MAX_BACKFILL: usize = 1000;

/// What a backfill did, or why it did nothing.
#[derive(Debug)]
pub enum Backfill {
    Done {
        created: usize,
        existing: usize,
        task_ids: Vec<Uuid>,
        effects: Box<Effects>,
    },
    /// More than [`MAX_BACKFILL`] fire times in the range.
    TooLarge,
    /// The template is not registered or refuses the context.
    NoTemplate,
    /// The schedule was backfilled `orchestrator.max_backfills_per_hour` times this hour.
    TooMany,
}

/// Starts a task for every fire time of `cron` in `[from, to]`, with the keys regular fires
/// of those times have (a time that had its task keeps it), in one transaction.
pub async fn backfill(
    shared: &Shared,
    row: &ScheduleRow,
    cron: &Cron,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    token_id: Option<i64>,
) -> Result<Backfill, store::Error> {
    let mut times = Vec::new();
    let mut at = cron.next_after(from - chrono::Duration::seconds(1));
    while let Some(t) = at
        && t <= to
    {
        if times.len() == MAX_BACKFILL {
            return Ok(Backfill::TooLarge);
        }
        times.push(t);
        at = cron.next_after(t);
    }
    let Some(source) = template_of(shared, row).await? else {
        return Ok(Backfill::NoTemplate);
    };
    let Some(mut tx) = shared.store.schedule_tx_any(row.id).await? else {
        return Ok(Backfill::NoTemplate);
    };
    if !tx
        .claim_backfill(shared.config.orchestrator.max_backfills_per_hour)
        .await?
    {
        return Ok(Backfill::TooMany);
    }
    let (mut created, mut existing, mut task_ids) = (0, 0, Vec::with_capacity(times.len()));
    let mut effects = Effects::default();
    for nominal in times {
        let c = tx
            .create_task(new_task(&source, row, fire_key(row.id, nominal), token_id))
            .await?;
        if c.created {
            created += 1;
        } else {
            existing += 1;
        }
        task_ids.push(c.task_id);
        effects.merge(c.effects);
    }
    let fire = Fire {
        next_fire_at: tx.row.next_fire_at,
        buffered_at: tx.row.buffered_at,
        ..Fire::default()
    };
    tx.finish(&fire).await?;
    ::metrics::counter!(m::SCHEDULE_FIRES.name, "how" => "backfill").increment(created as u64);
    Ok(Backfill::Done {
        created,
        existing,
        task_ids,
        effects: Box::new(effects),
    })
}
