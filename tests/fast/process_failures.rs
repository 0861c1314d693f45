//! Processes that die: a worker killed mid-step and an orchestrator restarted mid-task.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tasker::{RunningOrchestrator, TestEnv, steps_by_name, workspace_binary};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_mid_step_has_its_step_redelivered() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    let mut child = tokio::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .arg("--templates")
        .arg(tasker::templates("rust"))
        .arg("--health-port")
        .arg("0")
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        // Its own orchestrator: the default URL may be another one's (the demo's, on 8080).
        .env("TASKER_WORKER__ORCHESTRATOR_URL", o.url())
        .env("RUST_LOG", "tasker_worker=debug")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let task = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 1500})),
        )
        .await?;
    // The worker logs (to stderr) each step it receives; wait for the slow one, then kill it
    // mid-step.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("step received") && line.contains("name=slow") {
                return anyhow::Ok(());
            }
        }
        anyhow::bail!("worker exited before receiving the step")
    })
    .await??;
    child.kill().await?;
    child.wait().await?;

    let worker = env.rust_worker();
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(
        steps["slow"].attempt, 1,
        "a redelivery is the same attempt, not a retry"
    );
    assert_eq!(steps["slow"].result, Some(json!({"slept_ms": 1500})));
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orchestrator_restarted_mid_task_lets_the_task_complete() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let first = env.orchestrator().await?;
    let worker = env.rust_worker();
    let task = first
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "slow_chain")
                .context(json!({"sleep_ms": 800})),
        )
        .await?;
    // Stop the only orchestrator while the slow step runs: its result waits in the queue.
    first.stop().await;
    let second = RunningOrchestrator::start(env.config.clone()).await?;
    let done = second.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let steps = steps_by_name(&second.client, task.id).await?;
    assert_eq!(steps["quick"].state, "completed");
    worker.stop().await;
    second.stop().await;
    env.cleanup().await
}
