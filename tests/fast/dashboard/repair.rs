//! A failed task retried from the dashboard (`tests/dashboard/repair.mjs`): the token asked for,
//! the timeline zoomed to a handler's microseconds, a task started from a template page, the live
//! task list, and its filters.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_retried_from_the_dashboard_in_a_real_browser() -> anyhow::Result<()> {
    let (script, chromium) = browser_script("repair.mjs")?;
    // Tokens required, as off loopback: the page must ask for one before it shows anything.
    let (env, token) = with_write_token("dashboard-test").await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let failed = o
        .run_task(
            "rust_examples",
            "repairable",
            json!({"value": 6, "succeed_on_attempt": 4}),
        )
        .await?;
    assert_eq!(failed.state, "error", "{failed:?}");

    let shots = target_dir().join("dashboard-screenshots");
    let (report, stderr) = run_browser(
        &script,
        &chromium,
        &shots,
        &[
            ("TASKER_URL", o.url()),
            ("TASK_ID", failed.id.to_string()),
            ("TASKER_TOKEN", token),
            ("TEMPLATE", "rust_examples/repairable@1.0.0".to_owned()),
            ("START_TEMPLATE", "rust_examples/linear@1.0.0".to_owned()),
        ],
    )
    .await?;
    assert_clean(&report, &stderr, &shots, false);
    assert_eq!(report["askedForToken"], true, "{report}");
    assert_eq!(report["listedState"], "error");
    let before = &report["before"];
    assert_eq!(
        (&before["start"], &before["flaky"], &before["after"]),
        (&json!("completed"), &json!("failed"), &json!("cancelled")),
        "{report}"
    );
    // `side` ran beside `flaky`: done, or cancelled when the task failed first.
    assert!(
        before["side"] == "completed" || before["side"] == "cancelled",
        "{report}"
    );
    assert_eq!(report["failedSteps"], json!(["flaky"]));
    assert_eq!(report["errorShown"], true);
    assert_eq!(
        report["replayHint"],
        json!([format!("tasker replay {} flaky -- …", failed.id)]),
        "{report}"
    );
    assert_eq!(
        report["after"],
        json!({"start": "completed", "side": "completed", "flaky": "completed", "after": "completed"})
    );
    assert_eq!(report["waterfallRows"], 4);
    assert_eq!(report["handlerBars"], 4);
    assert_eq!(report["historyHasReason"], true);
    assert_eq!(report["retryHidden"], true);
    assert_eq!(
        report["templateNodes"],
        json!(["after", "flaky", "side", "start"])
    );
    assert_eq!(report["deadLetters"], 0);
    let has = |field: &Value, needle: &str| field.as_str().is_some_and(|s| s.contains(needle));

    // `flaky`'s error, from its 3rd attempt, folded as an earlier attempt's: no red box.
    assert_eq!(
        report["earlierError"],
        json!({"summary": "earlier attempt failed: transient: attempt 3 fails, 4 succeeds",
            "open": false, "redBoxes": 0}),
        "{report}"
    );
    // The timeline: a bar for each of its 4 attempts, the first 3 failed.
    assert_eq!(
        report["attempts"],
        json!({"all": [1, 2, 3, 4], "failed": [1, 2, 3]}),
        "{report}"
    );
    assert_eq!(report["attemptBars"], 4, "{report}");
    // Zoom in halves the window (µs from the task's creation) about its middle; Fit shows all.
    let window = |v: &Value| (v[0].as_f64().unwrap_or(-1.0), v[1].as_f64().unwrap_or(-1.0));
    let (from, to) = window(&report["zoom"]["before"]);
    let (zoomed_from, zoomed_to) = window(&report["zoom"]["zoomedIn"]);
    assert!(from == 0.0 && to > 0.0, "{report}");
    assert!(
        (zoomed_from - to / 4.0).abs() <= 2.0 && (zoomed_to - to * 3.0 / 4.0).abs() <= 2.0,
        "{report}"
    );
    assert_eq!(report["zoom"]["fit"], report["zoom"]["before"], "{report}");
    // A handler of less than 1 ms: its tooltip says how long, in µs; zoomed on its step then on
    // it, it grows from a sliver to most of the track.
    let micro_us = report["microBarUs"].as_f64().unwrap_or(0.0);
    assert!(micro_us > 0.0 && micro_us < 1000.0, "{report}");
    assert!(
        has(&report["microBarTitle"], "handler ") && has(&report["microBarTitle"], " µs"),
        "{report}"
    );
    let micro = &report["microBar"];
    let width = |i: usize| micro["widths"][i].as_f64().unwrap_or(0.0);
    let track = micro["track"].as_f64().unwrap_or(f64::MAX);
    assert!(width(1) >= width(0) && width(2) > track / 2.0, "{report}");

    // Started from the linear template's page: prefilled from its schema, a syntax error caught
    // as typed, the schema's refusal shown with the failing path, then a task that completed.
    assert_eq!(report["startPrefill"], json!({"value": 0}), "{report}");
    assert!(has(&report["startSyntax"]["error"], "not JSON"), "{report}");
    assert_eq!(report["startSyntax"]["submitDisabled"], true, "{report}");
    assert_eq!(report["startSyntax"]["clearedWhenFixed"], true, "{report}");
    assert!(
        has(&report["startRefused"], "context_schema_violation")
            && has(&report["startRefused"], "/value"),
        "{report}"
    );
    assert_eq!(report["startedState"], "complete", "{report}");
    let started: uuid::Uuid = report["startedTaskId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no started task: {report}"))?
        .parse()?;
    let started = o.client.task(started, None).await?;
    assert_eq!(
        (
            started.name.as_str(),
            started.idempotency_key.as_deref(),
            &started.result
        ),
        (
            "linear",
            Some("started-from-the-dashboard"),
            &Some(json!({"halve": {"value": 242}}))
        ),
        "{started:?}"
    );

    // The live list showed the task created meanwhile, highlighted, without a reload; the
    // context filter found it alone, one not JSON was refused (nothing sent), and nothing was
    // created before 2000.
    assert_eq!(report["liveRowAppeared"], true, "{report}");
    assert_eq!(report["liveRow"]["highlighted"], true, "{report}");
    assert_eq!(report["liveRow"]["notReloaded"], true, "{report}");
    assert_eq!(
        report["contextFiltered"],
        json!([report["liveRow"]["id"]]),
        "{report}"
    );
    let refused = &report["contextFilterRefused"];
    assert!(has(&refused["error"], "invalid_context_filter"), "{report}");
    assert_eq!(refused["invalid"], "true", "{report}");
    assert_eq!(refused["rows"], report["contextFiltered"], "{report}");
    assert!(has(&report["createdBefore2000"], "No tasks."), "{report}");
    assert_screenshots(
        &shots,
        &[
            "1-tasks",
            "2-failed",
            "3-complete",
            "4-template",
            "5-dead-letters",
            "6-zoomed-in",
            "7-zoomed-handler",
            "8-start-refused",
            "9-started",
            "10-live",
            "11-filtered",
        ],
    );

    // What the browser did, as the API records it.
    let task = o.client.task(failed.id, None).await?;
    assert_eq!(task.state, "complete");
    let history = o.client.history(failed.id).await?;
    assert!(
        history.iter().any(
            |h| h.by.as_deref() == Some("dashboard (token dashboard-test)")
                && h.reason.as_deref() == Some("retried: retried from the dashboard test")
        ),
        "{history:#?}"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
