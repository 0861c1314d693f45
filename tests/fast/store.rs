//! Storage functions checked against their Rust reference.

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::{Backoff, RetryPolicy};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_retry_delay_matches_the_rust_policy() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    for backoff in [Backoff::None, Backoff::Linear, Backoff::Exponential] {
        for (base_ms, max_ms) in [(0, 0), (20, 200), (100, 10_000), (1_000, u32::MAX as u64)] {
            for attempt in [1u32, 2, 3, 7, 40, 63, 64, 200] {
                let policy = RetryPolicy {
                    max_attempts: 300,
                    backoff,
                    base_ms,
                    max_ms,
                };
                let sql: i64 = sqlx::query_scalar("SELECT tasker_retry_delay_ms($1, $2, $3, $4)")
                    .bind(backoff.as_str())
                    .bind(base_ms as i64)
                    .bind(max_ms as i64)
                    .bind(attempt as i32)
                    .fetch_one(store.pool())
                    .await?;
                assert_eq!(
                    sql as u128,
                    policy.delay_after(attempt).as_millis(),
                    "{backoff:?} base {base_ms} max {max_ms} attempt {attempt}"
                );
            }
        }
    }
    store.pool().close().await;
    env.cleanup().await
}

/// An engine function in the database whose parameters or result differ from this build's
/// cannot be replaced in place: dropping it would pull it from under every orchestrator running
/// (`cache lookup failed for function`), so a start refuses, naming it, and drops nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_with_another_signature_is_refused_at_start_not_dropped() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    // What another release might have left: other parameter names, another return type.
    sqlx::raw_sql(
        "DROP FUNCTION tasker_runnable(text, int, int);
         CREATE FUNCTION tasker_runnable(kind text, skipped int, parents int) RETURNS int
         LANGUAGE sql IMMUTABLE AS $$ SELECT 7 $$;
         DELETE FROM tasker_engine;",
    )
    .execute(store.pool())
    .await?;
    store.pool().close().await;
    let refused = Store::connect(&env.config.database_url, 2)
        .await
        .expect_err("an incompatible function");
    assert!(
        matches!(
            refused,
            tasker_orchestration::store::Error::IncompatibleFunction {
                name: "tasker_runnable"
            }
        ),
        "{refused}"
    );
    let admin = sqlx::PgPool::connect(&env.config.database_url).await?;
    let left: i32 = sqlx::query_scalar("SELECT tasker_runnable('convergence', 1, 2)")
        .fetch_one(&admin)
        .await?;
    assert_eq!(left, 7, "the function in the database was replaced");
    admin.close().await;
    env.cleanup().await
}

/// A restart of the same build applies nothing (no function is replaced under orchestrators
/// running); a changed function is replaced in place, as the same function (its oid), and an
/// older release never replaces a newer release's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_sql_is_applied_once_per_change_and_never_downgraded() -> anyhow::Result<()> {
    use tasker_orchestration::store::{Applied, apply_engine, engine};
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let oid = || async {
        let oid: i64 = sqlx::query_scalar("SELECT 'tasker_apply_run'::regproc::oid::bigint")
            .fetch_one(store.pool())
            .await?;
        anyhow::Ok(oid)
    };
    let before = oid().await?;
    let release = env!("CARGO_PKG_VERSION");
    assert_eq!(
        apply_engine(store.pool(), &engine(), release).await?,
        Applied::Unchanged
    );
    // A newer build whose tasker_apply_run changed.
    let mut newer = engine();
    let run = newer
        .iter_mut()
        .find(|(name, _)| *name == "tasker_apply_run")
        .expect("tasker_apply_run");
    run.1 = run.1.replacen("BEGIN", "BEGIN\n    -- a newer body", 1);
    assert_eq!(
        apply_engine(store.pool(), &newer, "999.0.0").await?,
        Applied::Applied
    );
    assert_eq!(oid().await?, before, "replaced as another function");
    let body: String = sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE oid = $1::oid")
        .bind(before)
        .fetch_one(store.pool())
        .await?;
    assert!(body.contains("a newer body"));
    // This release's start leaves the newer release's functions as they are.
    store.pool().close().await;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let body: String = sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE oid = $1::oid")
        .bind(before)
        .fetch_one(store.pool())
        .await?;
    assert!(
        body.contains("a newer body"),
        "downgraded by an older release"
    );
    store.pool().close().await;
    env.cleanup().await
}
