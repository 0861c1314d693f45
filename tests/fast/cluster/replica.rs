//! Reads off the primary (`database.read_url`): against the local streaming replica of
//! `cargo-make/services.sh replica-start`, a caller reads its own writes at once, another
//! caller reads the replica (what it has not replayed is not there yet), and a replica that
//! stops replaying serves nobody once it lags past `reads::MAX_LAG`.

use std::time::Duration;

use serde_json::json;
use sqlx::Connection;

use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{Client, ClientOptions, CreateTask};
use tasker_orchestration::reads::MAX_LAG;

/// Polls `check` every 50 ms until it holds, for at most `timeout`.
async fn eventually<F, Fut>(timeout: Duration, what: &str, check: F) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tick.tick().await;
        if check().await? {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {timeout:?}"
        );
    }
}

fn linear(value: i64) -> CreateTask {
    CreateTask::new("rust_examples", "linear").context(json!({ "value": value }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_to_the_replica_except_a_callers_own_unreplayed_writes() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let replica = tasker::local_replica_url(&env.config.database_url)?;
    let mut config = env.config.clone();
    config.database.read_url = Some(replica.clone());
    let o = RunningOrchestrator::start(config).await?;
    eventually(Duration::from_secs(20), "the replica serving", || async {
        Ok(o.shared.reads.replica_serves())
    })
    .await?;
    let token = |t: Option<&str>| ClientOptions {
        token: t.map(str::to_owned),
        tls_ca_file: None,
    };
    let writer = Client::with_options(&o.url(), &token(Some("writer")))?;
    let other = Client::with_options(&o.url(), &token(None))?;

    // The writer reads every write at once, whatever the replica's lag.
    for i in 0..20 {
        let task = writer.create_task(&linear(i)).await?;
        assert_eq!(writer.task(task.id, None).await?.id, task.id);
        assert!(writer.steps(task.id).await.is_ok() && writer.history(task.id).await.is_ok());
    }

    let mut standby = sqlx::PgConnection::connect(&replica).await?;
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&mut standby)
        .await?;
    let paused = async {
        let task = writer.create_task(&linear(100)).await?;
        assert_eq!(
            writer.task(task.id, None).await?.id,
            task.id,
            "the writer's own write"
        );
        // Another caller reads the replica, which has not replayed it.
        let error = other
            .task(task.id, None)
            .await
            .expect_err("read from the paused replica");
        assert!(error.to_string().contains("task_not_found"), "{error}");
        // Until the replica lags too far: then everyone reads the primary.
        eventually(
            MAX_LAG * 4,
            "the primary serving while the replica lags",
            || async { Ok(other.task(task.id, None).await.is_ok()) },
        )
        .await?;
        assert!(!o.shared.reads.replica_serves());
        anyhow::Ok(task.id)
    }
    .await;
    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&mut standby)
        .await?;
    let id = paused?;
    eventually(
        Duration::from_secs(20),
        "the replica serving again",
        || async { Ok(o.shared.reads.replica_serves()) },
    )
    .await?;
    assert_eq!(other.task(id, None).await?.id, id);
    standby.close().await?;
    o.stop().await;
    tasker::stop_local_replica()?;
    env.cleanup().await
}
