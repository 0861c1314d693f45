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
