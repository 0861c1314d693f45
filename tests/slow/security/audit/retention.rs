//! The log's rows are kept: SQL can neither change nor delete one (the purge's own setting
//! included), while the retention purge removes the old ones, by hand and in its loop.

use std::time::Duration;

use sqlx::PgPool;
use tasker::TestEnv;
use tasker_orchestration::store::Store;

use super::{rows, written};
use crate::common::pair;

/// SQLSTATE of `sql`'s failure (statements run on `conn` as one simple query), if it failed in
/// the database; its transaction is rolled back either way.
async fn refused(conn: &mut sqlx::PgConnection, sql: &str) -> Option<String> {
    let outcome = match sqlx::raw_sql(sql).execute(&mut *conn).await {
        Ok(_) => None,
        Err(sqlx::Error::Database(e)) => e.code().map(|c| c.into_owned()),
        Err(e) => Some(e.to_string()),
    };
    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_cannot_change_or_delete_a_row_but_the_retention_purge_removes_old_ones()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let db = PgPool::connect(&env.config.database_url).await?;
    o.client
        .register_template(&pair("audit_sql"), None, None)
        .await?;
    written(&o, 1).await?;
    // An old row, as if written 40 days ago (an INSERT is what the log allows).
    sqlx::query(
        "INSERT INTO audit_log (at, method, route, status)
         VALUES (now() - interval '40 days', 'POST', '/v1/tasks', 201)",
    )
    .execute(&db)
    .await?;
    let before = rows(&db).await?;
    assert_eq!(before.len(), 2);
    for sql in [
        "UPDATE audit_log SET status = 200",
        "UPDATE audit_log SET token_name = 'someone-else' WHERE id = (SELECT min(id) FROM audit_log)",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE at < now() - interval '1 day'",
        "TRUNCATE audit_log",
        // The purge's own setting, with a cut-off too recent to be a retention's: refused.
        "BEGIN; SELECT set_config('tasker.audit_purge_before', now()::text, true); \
         DELETE FROM audit_log; COMMIT",
    ] {
        let mut conn = db.acquire().await?;
        assert_eq!(
            refused(&mut conn, sql).await.as_deref(),
            Some("42501"),
            "{sql}"
        );
    }
    assert_eq!(rows(&db).await?, before, "every row as it was");

    // The retention purge (30 days) takes the old row, and only it.
    let mut session = o
        .shared
        .store
        .purge_session(true)
        .await?
        .expect("waited for the lock");
    let purged = session.audit(Duration::from_secs(30 * 86_400), 100).await?;
    session.end().await;
    assert_eq!(purged, 1);
    assert_eq!(rows(&db).await?, before[..1], "the recent row stays");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retention_loop_purges_the_rows_older_than_retention_audit() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.retention.audit = "30d".into();
    let store = Store::connect(&env.config.database_url, 2).await?;
    for days in [40, 20] {
        sqlx::query(
            "INSERT INTO audit_log (at, method, route, status)
             VALUES (now() - make_interval(days => $1), 'POST', '/v1/tasks', 201)",
        )
        .bind(days)
        .execute(store.pool())
        .await?;
    }
    let db = store.pool().clone();
    // The loop's first pass comes as the orchestrator starts.
    let o = env.orchestrator().await?;
    o.until(Duration::from_secs(20), "the 40-day-old row purged", || {
        let db = db.clone();
        async move {
            let old: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM audit_log WHERE at < now() - interval '30 days'",
            )
            .fetch_one(&db)
            .await?;
            Ok((old == 0).then_some(()))
        }
    })
    .await?;
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&db)
        .await?;
    assert_eq!(kept, 1, "the 20-day-old row is kept");
    o.stop().await;
    env.cleanup().await
}
