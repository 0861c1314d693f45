//! Workers behave under deploys, in every language: on SIGTERM a worker takes no more steps,
//! lets the handler running at the signal finish, publishes its result and exits 0; the step ran
//! once (the next worker never receives it) and its result is applied. Steps it had not started
//! go to the next worker.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tokio::time::Instant;

use tasker::{RunningOrchestrator, TestEnv, steps_by_name};
use tasker_client::{Client, CreateTask, Step};
use tasker_orchestration::events::Event;
use uuid::Uuid;

/// A worker's `/health`.
async fn health(addr: &str) -> anyhow::Result<Value> {
    Ok(reqwest::get(format!("http://{addr}/health"))
        .await?
        .json()
        .await?)
}

/// Waits (at most `within`) until the worker at `addr` runs a handler.
async fn until_running(addr: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let seen = health(addr).await?;
        if seen["running"].as_u64().unwrap_or(0) > 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no handler running within {within:?}: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Step `name` of `task` once it is no longer in flight (`enqueued`, or `running` as its worker
/// reported it). A worker exits once the broker has
/// confirmed its last results; the orchestrator applies them a moment later, announcing each
/// applied batch on `applied` (subscribed before the worker was signalled, so none is missed).
async fn once_applied(
    client: &Client,
    applied: &mut tokio::sync::broadcast::Receiver<Event>,
    task: Uuid,
    name: &str,
) -> anyhow::Result<Step> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let step = steps_by_name(client, task)
            .await?
            .remove(name)
            .context("no such step")?;
        if !matches!(step.state.as_str(), "enqueued" | "running") {
            return Ok(step);
        }
        loop {
            match tokio::time::timeout_at(deadline, applied.recv()).await {
                Err(_) => {
                    anyhow::bail!("the result of {name} was not applied within 10 s: {step:?}")
                }
                Ok(Ok(Event::ResultsApplied { .. })) => break,
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => break,
                Ok(Err(e)) => return Err(e.into()),
                Ok(Ok(_)) => {}
            }
        }
    }
}

async fn stops_gracefully(language: &str) -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let namespace = format!("{language}_examples");
    let first = format!("{language}-leaving");
    let mut leaving = common::start_worker_with(
        &env,
        language,
        &first,
        &o.url(),
        &[("TASKER_WORKER__SHUTDOWN_TIMEOUT_MS", "20000")],
    )
    .await?;
    // `slow` sleeps 1.5 s, then `quick` runs.
    let task = o
        .client
        .create_task(&CreateTask::new(&namespace, "slow_chain").context(json!({"sleep_ms": 1500})))
        .await?;
    until_running(&leaving.health, Duration::from_secs(20)).await?;

    let mut applied = o.events().subscribe();
    let pid = leaving.child.id().context("the worker's pid")?;
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    assert!(signalled.success());
    let exited = tokio::time::timeout(Duration::from_secs(30), leaving.child.wait())
        .await
        .context("the worker did not exit within 30 s of SIGTERM")??;
    assert!(exited.success(), "{language}: exit {exited}");

    // The handler running at SIGTERM finished and its result was applied, from that worker.
    let slow = &once_applied(&o.client, &mut applied, task.id, "slow").await?;
    assert_eq!(slow.state, "completed", "{language}: {slow:?}");
    assert_eq!(slow.attempt, 1, "{language}");
    assert_eq!(slow.worker.as_deref(), Some(first.as_str()), "{language}");
    assert_eq!(slow.result, Some(json!({"slept_ms": 1500})), "{language}");

    // The next worker runs what was left, and never sees the step that finished.
    let staying =
        common::start_worker(&env, language, &format!("{language}-staying"), &o.url()).await?;
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{language}: {done:?}");
    let steps = steps_by_name(&o.client, task.id).await?;
    assert_eq!(steps["slow"].worker.as_deref(), Some(first.as_str()));
    assert_eq!(
        health(&staying.health).await?["received"],
        1,
        "{language}: the next worker received only `quick`"
    );
    drop(staying);
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_worker_finishes_the_running_step_on_sigterm() -> anyhow::Result<()> {
    stops_gracefully("rust").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_worker_finishes_the_running_step_on_sigterm() -> anyhow::Result<()> {
    stops_gracefully("ruby").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_worker_finishes_the_running_step_on_sigterm() -> anyhow::Result<()> {
    stops_gracefully("python").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_worker_finishes_the_running_step_on_sigterm() -> anyhow::Result<()> {
    stops_gracefully("typescript").await
}

#[path = "production/systemd_units.rs"]
mod systemd_units;
