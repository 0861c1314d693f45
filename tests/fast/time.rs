//! Workflows in time, through a real orchestrator, PostgreSQL and RabbitMQ: tasks that start
//! later, wait steps (sleeps, times in the context, signals and their timeouts), and the
//! schedules API. Wait steps need no worker: the orchestrator resolves them itself, so most of
//! these templates run with none. Waiting is on the orchestrator's own events (a result
//! applied, a sweep, a task finished), each check bounded by a timeout, never a fixed sleep.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::json;
use tasker::{Cluster, RunningOrchestrator, TestEnv, steps_by_name};
use tasker_client::{CreateTask, Error, ScheduleSpec};

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
async fn a_signal_that_arrives_before_its_wait_is_consumed_when_the_wait_begins()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o, "approve", "  - name: first\n    wait: {sleep: 1s}\n  - name: approval\n    depends_on: [first]\n    wait: {signal: approved, timeout: 30s}\n").await?;
    let task = o.client.create_task(&create("approve")).await?;
    assert_eq!(step(&o, task.id, "approval").await?.state, "pending");
    let payload = json!({"by": "alice", "big": 9_007_199_254_740_993_u64});
    let sent = o
        .client
        .signal(
            task.id,
            "approved",
            Some(payload.clone()),
            Some("s-1".into()),
        )
        .await?;
    assert!(sent.created);
    let again = o
        .client
        .signal(
            task.id,
            "approved",
            Some(payload.clone()),
            Some("s-1".into()),
        )
        .await?;
    assert!(!again.created, "the same signal again is a no-op");
    let e = o
        .client
        .signal(
            task.id,
            "approved",
            Some(json!({"by": "bob"})),
            Some("s-1".into()),
        )
        .await
        .expect_err("conflict");
    assert_eq!(api_code(&e), (409, "signal_conflict"));
    let e = o
        .client
        .signal(task.id, "not a name", None, None)
        .await
        .expect_err("bad name");
    assert_eq!(api_code(&e), (400, "invalid_signal_name"));

    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(step(&o, task.id, "approval").await?.result, Some(payload));
    let signals = o.client.signals(task.id).await?;
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].consumed_by.as_deref(), Some("approval"));
    let e = o
        .client
        .signal(task.id, "approved", None, None)
        .await
        .expect_err("finished");
    assert_eq!(api_code(&e), (409, "task_finished"));
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_timeout_fails_skips_or_continues_and_a_retry_waits_again() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    for policy in ["fail", "skip", "continue"] {
        let steps = format!(
            "  - name: approval\n    wait: {{signal: ok, timeout: 1s, on_timeout: {policy}}}\n  - name: after\n    depends_on: [approval]\n    wait: {{sleep: 0s}}\n"
        );
        register(&o, &format!("timeout_{policy}"), &steps).await?;
    }
    let ids: Vec<_> = create_each(&o, ["fail", "skip", "continue"]).await?;
    let [fail, skip, cont] = [ids[0], ids[1], ids[2]];

    let t = o.client.wait(skip, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    let steps = steps_by_name(&o.client, skip).await?;
    assert_eq!(steps["approval"].state, "skipped");
    assert_eq!(
        steps["after"].state, "skipped",
        "downstream is skipped like an unchosen branch"
    );

    let t = o.client.wait(cont, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    assert_eq!(
        step(&o, cont, "approval").await?.result,
        Some(json!({"timed_out": true}))
    );
    assert_eq!(step(&o, cont, "after").await?.state, "completed");

    let t = o.client.wait(fail, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "error");
    let approval = step(&o, fail, "approval").await?;
    assert_eq!(
        approval.error.map(|e| e["kind"].clone()),
        Some(json!("wait_timed_out"))
    );
    // A retry waits again; a signal then completes it.
    o.client.retry(fail, &Default::default()).await?;
    until(
        &o,
        Duration::from_secs(5),
        "the retried step waits",
        || async { Ok(step(&o, fail, "approval").await?.state == "waiting") },
    )
    .await?;
    o.client
        .signal(fail, "ok", Some(json!("yes")), None)
        .await?;
    let t = o.client.wait(fail, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    let approval = step(&o, fail, "approval").await?;
    assert_eq!((approval.result, approval.attempt), (Some(json!("yes")), 2));
    o.stop().await;
    env.cleanup().await
}

async fn create_each<const N: usize>(
    o: &RunningOrchestrator,
    policies: [&str; N],
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let mut ids = Vec::new();
    for p in policies {
        ids.push(
            o.client
                .create_task(&create(&format!("timeout_{p}")))
                .await?
                .id,
        );
    }
    Ok(ids)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_fire_pause_resume_trigger_and_backfill() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o, "tick", "  - name: t\n    wait: {sleep: 0s}\n").await?;
    let spec = |cron: &str| ScheduleSpec {
        namespace: "timed".into(),
        name: "every_second".into(),
        template: "tick".into(),
        version: None,
        cron: cron.into(),
        timezone: "UTC".into(),
        context: Some(json!({})),
        overlap: tasker_client::Overlap::Allow,
        catch_up: Some("10s".into()),
    };
    let (s, created) = o.client.put_schedule(&spec("* * * * * *")).await?;
    assert!(created);
    assert_eq!((s.catch_up.as_str(), s.overlap.as_str()), ("10s", "allow"));
    // Two fires, each a task that completes.
    let mut done = std::collections::HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut events = o.events().subscribe();
    while done.len() < 2 {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(tasker_orchestration::events::Event::TaskFinished { task_id, .. })) => {
                done.insert(task_id);
            }
            Ok(_) => {}
            Err(_) => anyhow::bail!("{} of 2 scheduled tasks finished within 10 s", done.len()),
        }
    }

    let shown = o.client.schedule("timed", "every_second").await?;
    assert!(shown.fires >= 2, "{shown:?}");
    assert_eq!(shown.upcoming.len(), 5);
    assert!(
        shown
            .upcoming
            .windows(2)
            .all(|w| w[1] - w[0] == chrono::Duration::seconds(1))
    );

    let paused = o
        .client
        .pause_schedule("timed", "every_second", Some("maintenance".into()))
        .await?;
    assert!(paused.paused);
    assert_eq!(paused.note.as_deref(), Some("maintenance"));
    // Applying the definition again (a worker restarting) keeps the pause.
    let (again, created) = o.client.put_schedule(&spec("* * * * * *")).await?;
    assert!(!created && again.paused);
    let fires = again.fires;
    let mut sweeps = o.events().subscribe();
    for _ in 0..6 {
        while !matches!(
            sweeps.recv().await?,
            tasker_orchestration::events::Event::Swept
        ) {}
    }
    assert_eq!(
        o.client.schedule("timed", "every_second").await?.fires,
        fires,
        "a paused schedule fires nothing"
    );
    let resumed = o.client.resume_schedule("timed", "every_second").await?;
    assert!(!resumed.paused && resumed.next_fire_at.is_some());

    // A nightly schedule: trigger now, then backfill three nights twice (idempotent).
    let mut nightly = spec("30 2 * * *");
    nightly.name = "nightly".into();
    nightly.timezone = "America/New_York".into();
    o.client.put_schedule(&nightly).await?;
    let task = o.client.trigger_schedule("timed", "nightly").await?;
    assert_eq!(
        o.client.wait(task.id, Duration::from_secs(10)).await?.state,
        "complete"
    );
    let from = "2026-03-07T00:00:00Z".parse()?;
    let to = "2026-03-09T23:00:00Z".parse()?;
    let first = o
        .client
        .backfill_schedule("timed", "nightly", from, to)
        .await?;
    assert_eq!((first.created, first.existing), (3, 0));
    let second = o
        .client
        .backfill_schedule("timed", "nightly", from, to)
        .await?;
    assert_eq!(
        (second.created, second.existing, second.task_ids.clone()),
        (0, 3, first.task_ids.clone())
    );
    let e = o
        .client
        .backfill_schedule("timed", "every_second", from, to)
        .await
        .expect_err("too large");
    assert_eq!(api_code(&e), (400, "backfill_too_large"));

    // Bad definitions name their field.
    for (mutate, code, field) in [
        (
            Box::new(|s: &mut ScheduleSpec| s.cron = "61 * * * *".into())
                as Box<dyn Fn(&mut ScheduleSpec)>,
            "invalid_cron",
            "cron",
        ),
        (
            Box::new(|s: &mut ScheduleSpec| s.timezone = "Mars/Olympus".into()),
            "invalid_timezone",
            "timezone",
        ),
        (
            Box::new(|s: &mut ScheduleSpec| s.catch_up = Some("2y".into())),
            "invalid_catch_up",
            "catch_up",
        ),
        (
            Box::new(|s: &mut ScheduleSpec| s.name = "no spaces".into()),
            "invalid_schedule",
            "name",
        ),
    ] {
        let mut bad = spec("* * * * *");
        mutate(&mut bad);
        let e = o.client.put_schedule(&bad).await.expect_err(code);
        let Error::Api {
            status,
            code: got,
            message,
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((*status, got.as_str()), (400, code), "{message}");
        assert!(message.contains(field), "{message}");
    }
    let mut unknown = spec("* * * * *");
    unknown.template = "nope".into();
    let e = o
        .client
        .put_schedule(&unknown)
        .await
        .expect_err("unknown template");
    assert_eq!(api_code(&e), (404, "unknown_template"));

    o.client.delete_schedule("timed", "every_second").await?;
    let e = o
        .client
        .schedule("timed", "every_second")
        .await
        .expect_err("deleted");
    assert_eq!(api_code(&e), (404, "schedule_not_found"));
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signal_wait_template_runs_with_a_worker() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "signal_wait").context(json!({"value": 4})))
        .await?;
    o.client
        .signal(
            task.id,
            "approved",
            Some(json!({"approved_by": "rust"})),
            None,
        )
        .await?;
    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(
        done.result,
        Some(json!({"finish": {"value": 8, "approved_by": "rust"}}))
    );
    cluster.shutdown().await
}

#[path = "time/deadlines.rs"]
mod deadlines;
