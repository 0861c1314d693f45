//! The audit log: every request to a route that changes something (each non-GET operation of
//! the OpenAPI document, walked from the document itself) leaves exactly one row, refused or
//! not, and no route changes or deletes a row (`routes`); neither does SQL outside the retention
//! purge, which takes the rows older than its retention (`retention`); an admin token scoped to
//! namespaces reads the rows of its namespaces only, and the API and the CLI filter and page
//! them (`reading`).

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;
use tasker::{RunningOrchestrator, TestEnv};
use tasker_orchestration::store::{Scope, Store};
use tasker_shared::config::AuthMode;

#[path = "audit/reading.rs"]
mod reading;
#[path = "audit/retention.rs"]
mod retention;
#[path = "audit/routes.rs"]
mod routes;

/// An orchestrator that requires tokens, and its first admin token (of every namespace, named
/// `root`), made before it starts as an operator would.
async fn guarded(env: &mut TestEnv) -> anyhow::Result<(RunningOrchestrator, String)> {
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let root = super::common::make_token(&store, "root", Scope::Admin, None).await?;
    Ok((env.orchestrator().await?, root))
}

/// Waits until this orchestrator's audit writer has written `rows` rows in all.
async fn written(o: &RunningOrchestrator, rows: u64) -> anyhow::Result<()> {
    let mut written = o.shared.audit.written();
    let waited = tokio::time::timeout(Duration::from_secs(10), written.wait_for(|n| *n >= rows))
        .await
        .map(|r| r.map(drop));
    match waited {
        Ok(done) => Ok(done?),
        Err(_) => anyhow::bail!("{} of {rows} audit rows written in 10 s", *written.borrow()),
    }
}

/// Every row, oldest first, as the table holds it.
async fn rows(db: &PgPool) -> anyhow::Result<Vec<Value>> {
    Ok(
        sqlx::query_scalar("SELECT to_jsonb(a) FROM audit_log a ORDER BY id")
            .fetch_all(db)
            .await?,
    )
}
