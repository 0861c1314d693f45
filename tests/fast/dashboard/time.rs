//! Schedules, delays and signals from the dashboard (`tests/dashboard/time.mjs`): a schedule
//! listed, triggered and paused, a delayed task cancelled after a confirmation, a dead letter
//! discarded, a step waiting for a signal completed with the signal sent from the page.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_delays_and_signals_from_the_dashboard_in_a_real_browser() -> anyhow::Result<()> {
    let (script, chromium) = browser_script("time.mjs")?;
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let url = o.url();

    // A schedule of the fixture `linear` (its newest version), once a year: its next fire stays
    // the same while the browser looks at it.
    let (status, created) = post_json(
        &format!("{url}/v1/schedules"),
        json!({"namespace": "rust_examples", "name": "new-year", "template": "linear",
            "cron": "0 9 1 1 *", "timezone": "Europe/Paris", "context": {"value": 6}})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["paused"], false, "{created}");
    let next_fire = created["next_fire_at"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no next fire: {created}"))?
        .to_owned();

    // A template whose middle step waits (an hour at most) for the signal `approved`; `finish`
    // doubles the value of its payload.
    let (status, template) = post_json(
        &format!("{url}/v1/templates"),
        json!({"namespace": "rust_examples", "name": "approval", "version": "1.0.0",
        "description": "double, wait for approval, double the approved value",
        "steps": [
            {"name": "prepare", "handler": "double"},
            {"name": "approval", "depends_on": ["prepare"],
                "wait": {"signal": "approved", "timeout": "1h", "on_timeout": "fail"}},
            {"name": "finish", "handler": "double", "depends_on": ["approval"]}
        ]})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{template}");
    // With a deadline of its own: the page says it and when it comes.
    let mut approval = CreateTask::new("rust_examples", "approval").context(json!({"value": 6}));
    approval.deadline = Some(tasker_client::DeadlineSpec {
        within: "2h".into(),
        action: tasker_client::DeadlineAction::Cancel,
    });
    let waiting = o.client.create_task(&approval).await?;

    // And a task that starts in an hour.
    let (status, later) = post_json(
        &format!("{url}/v1/tasks"),
        json!({"namespace": "rust_examples", "name": "linear", "context": {"value": 6},
            "delay": "1h"})
        .to_string(),
    )
    .await?;
    assert_eq!(status, 201, "{later}");
    assert_eq!(later["state"], "scheduled", "{later}");
    let later_id = later["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no id: {later}"))?
        .to_owned();

    // And a task the retention purged: its page says so.
    let finished = o
        .run_task("rust_examples", "linear", json!({"value": 6}))
        .await?;
    let old = tasker::copy_finished_task(
        &env.config.database_url,
        finished.id,
        1,
        chrono::Duration::days(40),
    )
    .await?;
    let purged = o
        .client
        .purge(&tasker_client::PurgeRequest {
            older_than: "30d".into(),
            states: None,
            dry_run: false,
            limit: None,
        })
        .await?;
    assert_eq!(purged.tasks, 1, "{purged:?}");

    // And a dead letter (a message from nowhere), for the page to discard after asking.
    let mut kept = o.dead_letters_kept();
    let broker = tasker_broker::Broker::connect(
        &env.config.amqp_url,
        &env.config.queue_prefix,
        "dashboard-test",
    )
    .await?;
    broker
        .publisher()
        .await?
        .publish_all(&[tasker_broker::Outgoing {
            queue: tasker_broker::topology::dead_letter_queue(&env.config.queue_prefix),
            payload: br#"{"not": "a message anyone reads"}"#.to_vec(),
        }])
        .await?;
    let dead_letter = kept.take(1, Duration::from_secs(20)).await?[0];
    // And two more, for the page to discard by filter (their reason) as one operation.
    for n in 0..2 {
        let body = format!("junk {n}");
        tasker::letters::park(
            &env.config,
            body.as_bytes(),
            "junk: unreadable",
            Some("elsewhere"),
        )
        .await?;
    }
    let mut junk = kept.take(2, Duration::from_secs(20)).await?;
    junk.sort_unstable();

    let shots = target_dir().join("dashboard-screenshots");
    let note = "maintenance window until Monday";
    let (report, stderr) = run_browser(
        &script,
        &chromium,
        &shots,
        &[
            ("TASKER_URL", url.clone()),
            ("SCHEDULE", "rust_examples/new-year".to_owned()),
            ("SCHEDULED_TASK_ID", later_id.clone()),
            ("WAIT_TASK_ID", waiting.id.to_string()),
            ("WAIT_STEP", "approval".to_owned()),
            ("SIGNAL", "approved".to_owned()),
            ("PAUSE_NOTE", note.to_owned()),
            ("PURGED_TASK_ID", old[0].to_string()),
            ("DEAD_LETTER_ID", dead_letter.to_string()),
        ],
    )
    .await?;
    assert_clean(&report, &stderr, &shots, true);
    let has = |field: &Value, needle: &str| field.as_str().is_some_and(|s| s.contains(needle));

    // The purged task's page: what happened to it instead of an error.
    let gone = &report["purged"];
    assert!(has(&gone["text"], &old[0].to_string()), "{report}");
    assert!(has(&gone["text"], "(complete) was purged at"), "{report}");
    assert_eq!(gone["state"], "complete", "{report}");
    assert_eq!(gone["errorHidden"], true, "{report}");

    // The retention page: the policy (the defaults) and that purge, at the API's exact time.
    let retention = &report["retention"];
    let rows: Vec<&str> = retention["rows"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        rows.get(..6),
        Some(
            &[
                "Completed tasks kept 30d",
                "Failed tasks kept 90d",
                "Cancelled tasks kept 30d",
                "Purged ids answer 410 for 90d",
                "Audit log kept 90d",
                "Pace 200 tasks a batch, at most 5% of the time, every 60 s",
            ][..]
        ),
        "{report}"
    );
    assert!(
        rows.get(6)
            .is_some_and(|r| r.starts_with("Last purge ") && r.contains(" ago)")),
        "{report}"
    );
    let last = o.client.retention().await?.last_purged_at.expect("purged");
    let shown = retention["lastPurgedAt"].as_str().unwrap_or_default();
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(shown).ok(),
        Some(last.into()),
        "{report}"
    );
    assert_eq!(retention["navCurrent"], "page", "{report}");
    assert_eq!(retention["errorHidden"], true, "{report}");

    // The schedules list: the row with its next fire, exact and relative.
    let listed = &report["listed"];
    assert_eq!(listed["paused"], "false", "{report}");
    assert_eq!(listed["nextFireAt"], next_fire.as_str(), "{report}");
    assert!(has(&listed["nextFire"], " in "), "{report}");
    assert!(has(&listed["cron"], "0 9 1 1 *"), "{report}");
    assert!(has(&listed["cron"], "Europe/Paris"), "{report}");
    assert_eq!(listed["template"], "linear @newest", "{report}");

    // Trigger now opened the task it started, which ran.
    let triggered: uuid::Uuid = report["triggeredTaskId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no triggered task: {report}"))?
        .parse()?;
    assert!(
        has(&report["triggerNotice"], "rust_examples/new-year"),
        "{report}"
    );
    let task = o.wait(triggered).await?;
    assert_eq!(
        (
            task.namespace.as_str(),
            task.name.as_str(),
            task.state.as_str()
        ),
        ("rust_examples", "linear", "complete"),
        "{task:?}"
    );

    // Paused from the page, with its note: the row says so, and so does the API.
    let paused = &report["paused"];
    assert!(has(&paused["state"], "paused"), "{report}");
    assert!(has(&paused["state"], note), "{report}");
    assert!(has(&paused["notice"], "paused"), "{report}");
    assert_eq!(paused["resumeShown"], true, "{report}");
    let schedule = get_json(&format!("{url}/v1/schedules/rust_examples/new-year")).await?;
    assert_eq!(schedule["paused"], true, "{schedule}");
    assert_eq!(schedule["note"], note, "{schedule}");

    // Its own page.
    let detail = &report["detail"];
    assert_eq!(
        detail["hash"], "#/schedules/rust_examples/new-year",
        "{report}"
    );
    assert_eq!(detail["cron"], "0 9 1 1 *", "{report}");
    assert_eq!(
        detail["upcoming"],
        json!(schedule["upcoming"].as_array().map_or(0, Vec::len)),
        "{report}\n{schedule}"
    );
    assert!(has(&detail["text"], note), "{report}");

    // The delayed task, under the `scheduled` filter.
    assert!(has(&report["scheduledRow"], "starts in"), "{report}");
    assert_eq!(
        report["scheduledBadge"], "badge state-scheduled",
        "{report}"
    );

    // The waiting step, said in words and drawn as waiting; the form named its signal.
    let waiting_shown = &report["waiting"];
    assert!(
        has(&waiting_shown["text"], "waiting for signal approved until "),
        "{report}"
    );
    assert!(has(&waiting_shown["text"], "(in "), "{report}");
    assert!(
        has(&waiting_shown["text"], "— on timeout: fail"),
        "{report}"
    );
    assert_eq!(waiting_shown["dagKind"], "wait", "{report}");
    assert_eq!(waiting_shown["formShown"], true, "{report}");
    assert_eq!(waiting_shown["prefilled"], "approved", "{report}");
    assert_eq!(waiting_shown["deadlineAction"], "cancel", "{report}");
    assert!(
        has(
            &waiting_shown["deadline"],
            "2 h 0 min from its start (cancel), at "
        ),
        "{report}"
    );
    // A name the API refuses: its error code and message were shown.
    assert!(has(&report["refusal"], "invalid_signal_name"), "{report}");

    // The signal sent from the form completed the step, and the task.
    let signalled = &report["signalled"];
    assert!(has(&signalled["notice"], "from-the-dashboard"), "{report}");
    assert_eq!(signalled["consumedBy"], "approval", "{report}");
    assert_eq!(signalled["formHidden"], true, "{report}");
    assert_eq!(signalled["errorHidden"], true, "{report}");
    assert_eq!(signalled["dagState"], "completed", "{report}");

    // The delayed task, cancelled from its page: asked first, "Keep it" sent nothing, the
    // confirmation cancelled it.
    let cancel = &report["cancel"];
    assert!(
        has(&cancel["asked"], &format!("Cancel task {later_id}?")),
        "{report}"
    );
    assert_eq!(
        (
            &cancel["keptPanelHidden"],
            &cancel["keptState"],
            &cancel["state"],
            &cancel["panelHidden"],
            &cancel["buttonHidden"]
        ),
        (
            &json!(true),
            &json!("scheduled"),
            &json!("cancelled"),
            &json!(true),
            &json!(true)
        ),
        "{report}"
    );
    let cancelled = get_json(&format!("{url}/v1/tasks/{later_id}")).await?;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");

    // The dead letter, discarded from its page: asked first ("Keep it" kept it), then gone.
    let discard = &report["discard"];
    assert!(
        has(
            &discard["asked"],
            &format!("Discard dead letter {dead_letter}?")
        ),
        "{report}"
    );
    assert_eq!(discard["keptStatus"], 200, "{report}");
    assert!(
        has(
            &discard["notice"],
            &format!("Dead letter {dead_letter} discarded.")
        ),
        "{report}"
    );
    let mut listed: Vec<i64> = discard["listed"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default();
    listed.sort_unstable();
    assert_eq!(listed, junk, "{report}");
    // The other two, by filter: counted, confirmed, discarded as one operation.
    let bulk = &report["bulk"];
    assert_eq!(bulk["filtered"], 2, "{report}");
    assert_eq!(bulk["matched"], 2, "{report}");
    assert_eq!(bulk["okLabel"], "Discard 2 dead letters", "{report}");
    assert_eq!(
        (&bulk["acted"], &bulk["after"]),
        (&json!(2), &json!(0)),
        "{report}"
    );
    let gone = reqwest::get(format!("{url}/v1/dead-letters/{dead_letter}")).await?;
    assert_eq!(gone.status(), 404);
    assert_screenshots(
        &shots,
        &[
            "t1-schedules",
            "t2-pause",
            "t3-schedule",
            "t4-scheduled",
            "t5-waiting",
            "t6-signalled",
            "t7-purged",
            "t8-retention",
            "t11-discard",
            "t9-cancel",
            "t10-cancelled",
        ],
    );

    // What the browser did, as the API records it: one signal (the refused one is not kept),
    // consumed by `approval`, whose result is its payload.
    let done = o.wait(waiting.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(
        done.result,
        Some(json!({"finish": {"value": 42}})),
        "{done:?}"
    );
    let steps = steps_by_name(&o.client, waiting.id).await?;
    assert_eq!(steps["approval"].result, Some(json!({"value": 21})));
    let signals = get_json(&format!("{url}/v1/tasks/{}/signals", waiting.id)).await?;
    let list = signals["signals"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 1, "{signals}");
    assert_eq!(
        (
            &list[0]["name"],
            &list[0]["signal_id"],
            &list[0]["payload"],
            &list[0]["consumed_by"]
        ),
        (
            &json!("approved"),
            &json!("from-the-dashboard"),
            &json!({"value": 21}),
            &json!("approval")
        ),
        "{signals}"
    );
    assert!(list[0]["consumed_at"].is_string(), "{signals}");

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
