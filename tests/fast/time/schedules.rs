//! The schedules API: a schedule fires, pauses (and keeps its pause when applied again),
//! resumes, is triggered and backfilled (idempotently); bad definitions are refused naming their
//! field; a deleted schedule is gone.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker_client::{Error, ScheduleSpec};

use super::{api_code, register};

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
