//! Workflows in time, through a real orchestrator, PostgreSQL and RabbitMQ: tasks that start
//! later, wait steps (sleeps, times in the context, signals and their timeouts), and the
//! schedules API. Wait steps need no worker: the orchestrator resolves them itself, so most of
//! these templates run with none. Waiting is on the orchestrator's own events (a result
//! applied, a sweep, a task finished), each check bounded by a timeout, never a fixed sleep.
//!
//! Delays, sleeps and times, and bad wait steps are here; signals in `signals`, schedules in
//! `schedules`, deadlines in `deadlines`.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::json;
use tasker::{RunningOrchestrator, TestEnv, steps_by_name};
use tasker_client::{CreateTask, Error};

/// A template of wait steps only (and their YAML), registered through the API.
async fn register(o: &RunningOrchestrator, name: &str, steps: &str) -> anyhow::Result<()> {
    let yaml = format!("namespace: timed\nname: {name}\nversion: '1'\nsteps:\n{steps}");
    o.client
        .register_template(&yaml, Some(&format!("{name}.yaml")), None)
        .await?;
    Ok(())
}

fn create(name: &str) -> CreateTask {
    CreateTask::new("timed", name)
}

/// Waits until `check` holds ([`RunningOrchestrator::until`]).
async fn until<F, Fut>(
    o: &RunningOrchestrator,
    timeout: Duration,
    what: &str,
    check: F,
) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    o.until(timeout, what, || async { Ok(check().await?.then_some(())) })
        .await
}

async fn step(
    o: &RunningOrchestrator,
    task: uuid::Uuid,
    name: &str,
) -> anyhow::Result<tasker_client::Step> {
    steps_by_name(&o.client, task)
        .await?
        .remove(name)
        .ok_or_else(|| anyhow::anyhow!("no step {name}"))
}

fn api_code(e: &Error) -> (u16, &str) {
    match e {
        Error::Api { status, code, .. } => (*status, code.as_str()),
        _ => (0, ""),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_task_waits_scheduled_then_starts_and_a_scheduled_one_cancels()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o, "nap", "  - name: nap\n    wait: {sleep: 0s}\n").await?;
    let started = Instant::now();
    let task = o.client.create_task(&create("nap").delay("1s")).await?;
    assert_eq!(task.state, "scheduled");
    assert!(task.run_at.is_some());
    let nap = step(&o, task.id, "nap").await?;
    assert_eq!(
        (nap.state.as_str(), nap.attempt),
        ("pending", 0),
        "no step runs before its time"
    );

    let later = o
        .client
        .create_task(&create("nap").run_at(chrono::Utc::now() + chrono::Duration::hours(1)))
        .await?;
    let listed = o
        .client
        .tasks(&tasker_client::TaskQuery {
            state: Some("scheduled".into()),
            ..Default::default()
        })
        .await?;
    assert!(listed.tasks.iter().any(|t| t.id == later.id));
    assert_eq!(o.client.cancel(later.id).await?.state, "cancelled");

    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(done.state, "complete");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "started early: {:?}",
        started.elapsed()
    );
    let history = o.client.history(task.id).await?;
    assert!(
        history.iter().any(|h| h.step.is_none()
            && h.from.as_deref() == Some("scheduled")
            && h.to == "running")
    );

    for (req, code) in [
        (create("nap").delay("-1s"), "invalid_delay"),
        (create("nap").delay("soon"), "invalid_delay"),
        (
            create("nap").run_at(chrono::Utc::now() + chrono::Duration::days(400)),
            "invalid_run_at",
        ),
        (
            create("nap").delay("1s").run_at(chrono::Utc::now()),
            "invalid_run_at",
        ),
    ] {
        let e = o.client.create_task(&req).await.expect_err(code);
        assert_eq!(api_code(&e), (400, code), "{e}");
    }
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_and_an_until_wake_on_time_and_a_bad_until_fails_alone() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o, "sleepy", "  - name: a\n    wait: {sleep: 1s}\n  - name: b\n    depends_on: [a]\n    wait: {until: /at}\n").await?;
    let started = Instant::now();
    let at = (chrono::Utc::now() + chrono::Duration::milliseconds(1500))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let task = o
        .client
        .create_task(&create("sleepy").context(json!({"at": at})))
        .await?;
    until(&o, Duration::from_secs(5), "a waits", || async {
        let a = step(&o, task.id, "a").await?;
        Ok(a.state == "waiting")
    })
    .await?;
    let a = step(&o, task.id, "a").await?;
    assert_eq!(a.step_type, "wait");
    assert_eq!(
        a.wait.as_ref().map(|w| w["kind"].clone()),
        Some(json!("sleep"))
    );
    assert!(
        a.wait.as_ref().is_some_and(|w| w["until"].is_string()),
        "{:?}",
        a.wait
    );
    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let steps = steps_by_name(&o.client, task.id).await?;
    assert!(
        steps["a"]
            .result
            .as_ref()
            .is_some_and(|r| r["woke_at"].is_string())
    );
    assert_eq!(steps["b"].worker.as_deref(), Some("orchestrator"));

    let bad = o
        .client
        .create_task(&create("sleepy").context(json!({"at": "tomorrow"})))
        .await?;
    let ok = o
        .client
        .create_task(&create("sleepy").context(json!({"at": at})))
        .await?;
    let bad = o.client.wait(bad.id, Duration::from_secs(10)).await?;
    assert_eq!(bad.state, "error");
    assert_eq!(
        step(&o, bad.id, "b")
            .await?
            .error
            .map(|e| e["kind"].clone()),
        Some(json!("wait_until_invalid"))
    );
    assert_eq!(
        o.client.wait(ok.id, Duration::from_secs(10)).await?.state,
        "complete"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_wait_steps_are_refused_naming_the_field_and_line() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    for (steps, field) in [
        (
            "  - name: w\n    wait: {sleep: 1s, signal: x}\n",
            "steps.w.wait",
        ),
        (
            "  - name: w\n    wait: {sleep: 400d}\n",
            "steps.w.wait.sleep",
        ),
        (
            "  - name: w\n    wait: {signal: ok, timeout: -5s}\n",
            "steps.w.wait.timeout",
        ),
        (
            "  - name: w\n    handler: h\n    wait: {sleep: 1s}\n",
            "steps.w.handler",
        ),
        (
            "  - name: w\n    handler: 'tasker:wait'\n",
            "steps.w.handler",
        ),
    ] {
        let yaml = format!("namespace: timed\nname: bad\nversion: '1'\nsteps:\n{steps}");
        let e = o
            .client
            .register_template(&yaml, Some("bad.yaml"), None)
            .await
            .expect_err(field);
        let Error::Api {
            status,
            code,
            message,
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(
            (*status, code.as_str()),
            (422, "invalid_template"),
            "{message}"
        );
        assert!(
            message.contains(field) && message.contains("bad.yaml:5"),
            "{field}: {message}"
        );
    }
    o.stop().await;
    env.cleanup().await
}

#[path = "time/deadlines.rs"]
mod deadlines;
#[path = "time/schedules.rs"]
mod schedules;
#[path = "time/signals.rs"]
mod signals;
