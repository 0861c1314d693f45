//! The engine's SQL functions, one file each in `tasker-orchestration/sql/`, compiled into the
//! binary and applied with `CREATE OR REPLACE` after the migrations on every start. Migrations
//! change the schema; these files are where the step and task transitions are written.

use sqlx::PgPool;

use super::{Error, Result};

/// In dependency order: a function is created after the functions it calls in SQL-language
/// bodies (PL/pgSQL bodies are resolved at call time, but keeping one order is simplest).
pub(super) const FUNCTIONS: [(&str, &str); 40] = [
    (
        "tasker_retry_delay_ms",
        include_str!("../../sql/tasker_retry_delay_ms.sql"),
    ),
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
    ("tasker_claim", include_str!("../../sql/tasker_claim.sql")),
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
    (
        "tasker_count_down_all",
        include_str!("../../sql/tasker_count_down_all.sql"),
    ),
    ("tasker_skip", include_str!("../../sql/tasker_skip.sql")),
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
        "tasker_close_steps",
        include_str!("../../sql/tasker_close_steps.sql"),
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
    (
        "tasker_apply_results",
        include_str!("../../sql/tasker_apply_results.sql"),
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
        "tasker_wait_until",
        include_str!("../../sql/tasker_wait_until.sql"),
    ),
    (
        "tasker_begin_waits",
        include_str!("../../sql/tasker_begin_waits.sql"),
    ),
    ("tasker_wake", include_str!("../../sql/tasker_wake.sql")),
    (
        "tasker_start_tasks",
        include_str!("../../sql/tasker_start_tasks.sql"),
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

/// Any number to serialize concurrent starts on; orchestrators starting together replace the
/// functions one after the other.
const LOCK_KEY: i64 = 0x7461_736b_6572_0001;

/// Creates or replaces every function in one transaction.
pub(super) async fn apply(pool: &PgPool) -> Result<()> {
    let mut tx = pool.begin().await.map_err(Error::from_sqlx)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(LOCK_KEY)
        .execute(&mut *tx)
        .await
        .map_err(Error::from_sqlx)?;
    for (name, sql) in FUNCTIONS {
        replace(&mut tx, name, sql)
            .await
            .map_err(|source| Error::Function { name, source })?;
    }
    tx.commit().await.map_err(Error::from_sqlx)?;
    Ok(())
}

/// `CREATE OR REPLACE` cannot rename a parameter or change a function's return type (SQLSTATE
/// 42P13); then the old definition is dropped and the new one created, in the same transaction,
/// so concurrent callers see the old function until the commit and the new one after it.
async fn replace(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    name: &str,
    sql: &str,
) -> std::result::Result<(), sqlx::Error> {
    sqlx::query("SAVEPOINT tasker_function")
        .execute(&mut **tx)
        .await?;
    match sqlx::raw_sql(sql).execute(&mut **tx).await {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P13") => {
            sqlx::query("ROLLBACK TO SAVEPOINT tasker_function")
                .execute(&mut **tx)
                .await?;
            let signatures: Vec<String> = sqlx::query_scalar(
                "SELECT p.oid::regprocedure::text FROM pg_proc p
                 WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace",
            )
            .bind(name)
            .fetch_all(&mut **tx)
            .await?;
            for signature in signatures {
                sqlx::raw_sql(&format!("DROP FUNCTION {signature}"))
                    .execute(&mut **tx)
                    .await?;
            }
            sqlx::raw_sql(sql).execute(&mut **tx).await?;
            Ok(())
        }
        Err(e) => Err(e),
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
        }
    }
}
