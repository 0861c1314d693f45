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

/// An engine function whose new version renames a parameter or changes its return type cannot
/// be `CREATE OR REPLACE`d over the old one: starting replaces it anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_with_renamed_parameters_or_another_return_type_is_replaced_at_start()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    // What an older release might have left: other parameter names, another return type.
    sqlx::raw_sql(
        "DROP FUNCTION tasker_runnable(text, int, int);
         CREATE FUNCTION tasker_runnable(kind text, skipped int, parents int) RETURNS int
         LANGUAGE sql IMMUTABLE AS $$ SELECT 7 $$;
         DROP FUNCTION tasker_result_problem(text, jsonb, jsonb);
         CREATE FUNCTION tasker_result_problem(step_type text, branches jsonb, result jsonb)
         RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;",
    )
    .execute(store.pool())
    .await?;
    store.pool().close().await;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let runnable: bool = sqlx::query_scalar("SELECT tasker_runnable('convergence', 1, 2)")
        .fetch_one(store.pool())
        .await?;
    assert!(runnable);
    let problem: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT tasker_result_problem('batchable', '[]', '{}')")
            .fetch_one(store.pool())
            .await?;
    assert_eq!(
        problem.as_ref().map(|p| &p["kind"]),
        Some(&serde_json::json!("invalid_batches"))
    );
    store.pool().close().await;
    env.cleanup().await
}
