//! The engine's SQL functions, one file each in `tasker-orchestration/sql/`, compiled into the
//! binary and applied with `CREATE OR REPLACE` after the migrations at a start that finds them
//! changed (`apply_engine`). Migrations
//! change the schema; these files are where the step and task transitions are written.

use sqlx::PgPool;

use super::{Error, Result};

/// In dependency order: a function is created after the functions it calls in SQL-language
/// bodies (PL/pgSQL bodies are resolved at call time, but keeping one order is simplest).
pub(super) const FUNCTIONS: [(&str, &str); 70] = [
    (
        "tasker_retry_delay_ms",
        include_str!("../../sql/tasker_retry_delay_ms.sql"),
    ),
    ("tasker_held", include_str!("../../sql/tasker_held.sql")),
    (
        "tasker_runnable",
        include_str!("../../sql/tasker_runnable.sql"),
    ),
    (
        "tasker_uuid_v7",
        include_str!("../../sql/tasker_uuid_v7.sql"),
    ),
    (
        "tasker_orchestrator",
        include_str!("../../sql/tasker_orchestrator.sql"),
    ),
    (
        "tasker_step_messages",
        include_str!("../../sql/tasker_step_messages.sql"),
    ),
    (
        "tasker_claim_slot",
        include_str!("../../sql/tasker_claim_slot.sql"),
    ),
    (
        "tasker_claim_rate",
        include_str!("../../sql/tasker_claim_rate.sql"),
    ),
    ("tasker_claim", include_str!("../../sql/tasker_claim.sql")),
    ("tasker_hold", include_str!("../../sql/tasker_hold.sql")),
    (
        "tasker_dispatched",
        include_str!("../../sql/tasker_dispatched.sql"),
    ),
    (
        "tasker_dispatch",
        include_str!("../../sql/tasker_dispatch.sql"),
    ),
    (
        "tasker_end_task",
        include_str!("../../sql/tasker_end_task.sql"),
    ),
    ("tasker_shard", include_str!("../../sql/tasker_shard.sql")),
    (
        "tasker_fold_tallies",
        include_str!("../../sql/tasker_fold_tallies.sql"),
    ),
    (
        "tasker_count_down_all",
        include_str!("../../sql/tasker_count_down_all.sql"),
    ),
    ("tasker_skip", include_str!("../../sql/tasker_skip.sql")),
    (
        "tasker_insert_batch_workers",
        include_str!("../../sql/tasker_insert_batch_workers.sql"),
    ),
    (
        "tasker_expand_batches",
        include_str!("../../sql/tasker_expand_batches.sql"),
    ),
    (
        "tasker_result_problem",
        include_str!("../../sql/tasker_result_problem.sql"),
    ),
    (
        "tasker_step_succeeded",
        include_str!("../../sql/tasker_step_succeeded.sql"),
    ),
    (
        "tasker_completed",
        include_str!("../../sql/tasker_completed.sql"),
    ),
    (
        "tasker_close_counted",
        include_str!("../../sql/tasker_close_counted.sql"),
    ),
    (
        "tasker_close_steps",
        include_str!("../../sql/tasker_close_steps.sql"),
    ),
    (
        "tasker_tallied",
        include_str!("../../sql/tasker_tallied.sql"),
    ),
    (
        "tasker_succeed_steps",
        include_str!("../../sql/tasker_succeed_steps.sql"),
    ),
    (
        "tasker_apply_successes",
        include_str!("../../sql/tasker_apply_successes.sql"),
    ),
    (
        "tasker_judge_results",
        include_str!("../../sql/tasker_judge_results.sql"),
    ),
    (
        "tasker_apply_run",
        include_str!("../../sql/tasker_apply_run.sql"),
    ),
    (
        "tasker_apply_retry",
        include_str!("../../sql/tasker_apply_retry.sql"),
    ),
    (
        "tasker_apply_failure",
        include_str!("../../sql/tasker_apply_failure.sql"),
    ),
    (
        "tasker_apply_shaped",
        include_str!("../../sql/tasker_apply_shaped.sql"),
    ),
    (
        "tasker_applied",
        include_str!("../../sql/tasker_applied.sql"),
    ),
    ("tasker_settle", include_str!("../../sql/tasker_settle.sql")),
    (
        "tasker_apply_results",
        include_str!("../../sql/tasker_apply_results.sql"),
    ),
    (
        "tasker_new_tasks",
        include_str!("../../sql/tasker_new_tasks.sql"),
    ),
    (
        "tasker_insert_tasks",
        include_str!("../../sql/tasker_insert_tasks.sql"),
    ),
    (
        "tasker_dedupe_window",
        include_str!("../../sql/tasker_dedupe_window.sql"),
    ),
    (
        "tasker_debounce_join",
        include_str!("../../sql/tasker_debounce_join.sql"),
    ),
    (
        "tasker_start_controls",
        include_str!("../../sql/tasker_start_controls.sql"),
    ),
    (
        "tasker_created_terms",
        include_str!("../../sql/tasker_created_terms.sql"),
    ),
    (
        "tasker_create_tasks",
        include_str!("../../sql/tasker_create_tasks.sql"),
    ),
    (
        "tasker_repair_target",
        include_str!("../../sql/tasker_repair_target.sql"),
    ),
    (
        "tasker_repair_resume",
        include_str!("../../sql/tasker_repair_resume.sql"),
    ),
    ("tasker_repair", include_str!("../../sql/tasker_repair.sql")),
    (
        "tasker_repair_many",
        include_str!("../../sql/tasker_repair_many.sql"),
    ),
    (
        "tasker_end_tasks",
        include_str!("../../sql/tasker_end_tasks.sql"),
    ),
    (
        "tasker_operate",
        include_str!("../../sql/tasker_operate.sql"),
    ),
    (
        "tasker_wait_until",
        include_str!("../../sql/tasker_wait_until.sql"),
    ),
    (
        "tasker_event_doc",
        include_str!("../../sql/tasker_event_doc.sql"),
    ),
    (
        "tasker_event_values",
        include_str!("../../sql/tasker_event_values.sql"),
    ),
    (
        "tasker_event_take",
        include_str!("../../sql/tasker_event_take.sql"),
    ),
    (
        "tasker_event_wait_begin",
        include_str!("../../sql/tasker_event_wait_begin.sql"),
    ),
    (
        "tasker_deliver_events",
        include_str!("../../sql/tasker_deliver_events.sql"),
    ),
    (
        "tasker_begin_waits",
        include_str!("../../sql/tasker_begin_waits.sql"),
    ),
    (
        "tasker_child_outcome",
        include_str!("../../sql/tasker_child_outcome.sql"),
    ),
    (
        "tasker_until_outcome",
        include_str!("../../sql/tasker_until_outcome.sql"),
    ),
    (
        "tasker_signal_outcome",
        include_str!("../../sql/tasker_signal_outcome.sql"),
    ),
    (
        "tasker_skip_timed_out",
        include_str!("../../sql/tasker_skip_timed_out.sql"),
    ),
    ("tasker_wake", include_str!("../../sql/tasker_wake.sql")),
    (
        "tasker_start_tasks",
        include_str!("../../sql/tasker_start_tasks.sql"),
    ),
    (
        "tasker_pass_deadlines",
        include_str!("../../sql/tasker_pass_deadlines.sql"),
    ),
    ("tasker_signal", include_str!("../../sql/tasker_signal.sql")),
    (
        "tasker_task_result",
        include_str!("../../sql/tasker_task_result.sql"),
    ),
    (
        "tasker_task_ended",
        include_str!("../../sql/tasker_task_ended.sql"),
    ),
    (
        "tasker_release_slot",
        include_str!("../../sql/tasker_release_slot.sql"),
    ),
    (
        "tasker_wake_throttled",
        include_str!("../../sql/tasker_wake_throttled.sql"),
    ),
    (
        "tasker_reconcile_slots",
        include_str!("../../sql/tasker_reconcile_slots.sql"),
    ),
    (
        "tasker_purgeable",
        include_str!("../../sql/tasker_purgeable.sql"),
    ),
    (
        "tasker_purge_tasks",
        include_str!("../../sql/tasker_purge_tasks.sql"),
    ),
];

/// Any number to serialize concurrent starts on; orchestrators starting together apply the
/// functions one after the other.
const LOCK_KEY: i64 = 0x7461_736b_6572_0001;

/// The release this build applies its functions as.
const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The engine's SQL as built into this binary: each function's name and text, in order.
pub fn engine() -> Vec<(&'static str, String)> {
    FUNCTIONS
        .iter()
        .map(|(name, sql)| (*name, (*sql).to_owned()))
        .collect()
}

/// The checksum that identifies a set of functions (SHA-256 of names and texts, in order).
fn checksum(functions: &[(&str, String)]) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for (name, sql) in functions {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(sql.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What starting did to the engine's SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The database already runs these functions: nothing was touched.
    Unchanged,
    /// They were applied (new, or changed since).
    Applied,
    /// A newer release applied its own, which this build runs with (they stay compatible).
    Newer(String),
}

/// Applies this build's functions ([`apply_engine`] of [`engine`] as this release).
pub(super) async fn apply(pool: &PgPool) -> Result<Applied> {
    apply_engine(pool, &engine(), RELEASE).await
}

/// Applies `functions` as release `release`, once: only when their checksum differs from the
/// one recorded (`tasker_engine`) and `release` is not older than the one that applied those,
/// under an advisory lock (orchestrators starting together apply them once). A restart of the
/// same build touches nothing, so it never disturbs orchestrators already running; a changed
/// function is replaced in place (`CREATE OR REPLACE`: the same function, never dropped, so a
/// running orchestrator's next call uses the new body), and one whose parameters or result
/// changed is refused loudly rather than dropped under running orchestrators.
pub async fn apply_engine(
    pool: &PgPool,
    functions: &[(&'static str, String)],
    release: &str,
) -> Result<Applied> {
    let ours = checksum(functions);
    if recorded(pool).await?.is_some_and(|(_, sum)| sum == ours) {
        return Ok(Applied::Unchanged);
    }
    let mut attempt = 0u32;
    loop {
        match apply_once(pool, functions, release, &ours).await {
            Err(Error::Query(sqlx::Error::Database(e)))
                if e.code().as_deref() == Some("55P03") && attempt < 600 =>
            {
                // The tables a trigger is replaced on were busy for longer than the lock
                // timeout: try again in a moment rather than make anyone wait behind us.
                attempt += 1;
                if attempt % 50 == 1 {
                    tracing::info!(
                        attempt,
                        "engine tables busy; applying the engine's SQL again shortly"
                    );
                }
                tokio::time::sleep(std::time::Duration::from_millis(
                    50 + u64::from(attempt % 7) * 20,
                ))
                .await;
            }
            other => return other,
        }
    }
}

async fn recorded(pool: &PgPool) -> Result<Option<(String, String)>> {
    sqlx::query_as("SELECT release, checksum FROM tasker_engine WHERE id = 1")
        .fetch_optional(pool)
        .await
        .map_err(Error::from_sqlx)
}

async fn apply_once(
    pool: &PgPool,
    functions: &[(&'static str, String)],
    release: &str,
    ours: &str,
) -> Result<Applied> {
    let mut tx = pool.begin().await.map_err(Error::from_sqlx)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(LOCK_KEY)
        .execute(&mut *tx)
        .await
        .map_err(Error::from_sqlx)?;
    let theirs: Option<(String, String)> =
        sqlx::query_as("SELECT release, checksum FROM tasker_engine WHERE id = 1 FOR UPDATE")
            .fetch_optional(&mut *tx)
            .await
            .map_err(Error::from_sqlx)?;
    match &theirs {
        Some((_, sum)) if sum == ours => return Ok(Applied::Unchanged),
        Some((newer, _)) if older(release, newer) => return Ok(Applied::Newer(newer.clone())),
        _ => {}
    }
    // The triggers on these tables are replaced too: take both table locks first, waiting
    // less than PostgreSQL's deadlock timeout, so a busy table makes this start try again
    // instead of making a transaction of a running orchestrator a deadlock's victim.
    sqlx::raw_sql(
        "SET LOCAL lock_timeout = '200ms';
         LOCK TABLE steps, tasks IN SHARE ROW EXCLUSIVE MODE;
         SET LOCAL lock_timeout = 0;",
    )
    .execute(&mut *tx)
    .await
    .map_err(Error::from_sqlx)?;
    for &(name, ref sql) in functions {
        sqlx::raw_sql(sql)
            .execute(&mut *tx)
            .await
            .map_err(|source| {
                let incompatible = matches!(&source, sqlx::Error::Database(e)
                if e.code().as_deref() == Some("42P13"));
                if incompatible {
                    Error::IncompatibleFunction { name }
                } else {
                    Error::Function { name, source }
                }
            })?;
    }
    sqlx::query(
        "INSERT INTO tasker_engine (id, release, checksum, applied_by)
         VALUES (1, $1, $2, current_setting('tasker.orchestrator', true))
         ON CONFLICT (id) DO UPDATE SET release = EXCLUDED.release,
             checksum = EXCLUDED.checksum, applied_at = clock_timestamp(),
             applied_by = EXCLUDED.applied_by",
    )
    .bind(release)
    .bind(ours)
    .execute(&mut *tx)
    .await
    .map_err(Error::from_sqlx)?;
    tx.commit().await.map_err(Error::from_sqlx)?;
    Ok(Applied::Applied)
}

/// Whether release `a` is older than `b` (dotted numbers; text compared only when they are
/// not numbers).
fn older(a: &str, b: &str) -> bool {
    let parse = |v: &str| -> Option<Vec<u64>> {
        v.split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().ok())
            .collect()
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a < b,
        _ => a < b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_sql_is_applied_once_and_defines_its_name() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut listed: Vec<String> = FUNCTIONS.iter().map(|(n, _)| format!("{n}.sql")).collect();
        listed.sort();
        assert_eq!(files, listed, "sql/ and FUNCTIONS disagree");
        for (name, sql) in FUNCTIONS {
            assert!(
                sql.contains(&format!("CREATE OR REPLACE FUNCTION {name}(")),
                "{name}.sql must define {name} with CREATE OR REPLACE"
            );
            // A dropped function is gone from under every orchestrator running a plan that
            // calls it ("cache lookup failed for function"): never drop, give a changed
            // signature a new name.
            assert!(!sql.contains("DROP "), "{name}.sql drops something");
        }
    }

    #[test]
    fn releases_compare_by_their_numbers() {
        assert!(older("0.1.0", "0.2.0"));
        assert!(older("0.9.0", "0.10.0"));
        assert!(!older("0.10.0", "0.9.0"));
        assert!(!older("1.0.0", "1.0.0"));
    }

    #[test]
    fn a_changed_function_changes_the_checksum() {
        let mut functions = engine();
        let before = checksum(&functions);
        assert_eq!(before, checksum(&engine()));
        functions[0].1.push_str("\n-- changed");
        assert_ne!(before, checksum(&functions));
    }
}
