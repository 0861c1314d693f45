//! Deadlines: a task that runs past its template's deadline fails (or is cancelled, or only
//! alerted) once, counted from its start — a task that starts later counts from then — and
//! across an orchestrator's restart; a request's deadline replaces its template's; a bad one is
//! refused by name. Tasks here wait on a step no worker serves, so only a deadline ends them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tasker::TestEnv;
use tasker_client::{CreateTask, DeadlineAction, DeadlineSpec, Task};

use super::api_code;

/// A template of `shop_dl` whose one step no worker serves, with `deadline` (YAML).
fn template(name: &str, deadline: &str) -> String {
    format!(
        "namespace: shop_dl\nname: {name}\nversion: '1'\n{deadline}steps:\n  - name: stuck\n    \
         handler: nobody_serves_this\n"
    )
}

/// How late the deadline's action came: the task's end less its deadline — the one a failed
/// task's error names, else `within` after `start` (its creation time, stamped a fraction of a
/// millisecond after the start its deadline counts from: 10 ms of slack).
fn lateness(task: &Task, start: DateTime<Utc>, within: Duration) -> f64 {
    let named = task.error.as_ref().and_then(|e| e["deadline_at"].as_str());
    let (due, slack) = match named {
        Some(at) => (at.parse::<DateTime<Utc>>().expect("an RFC 3339 time"), 0),
        None => (
            start + chrono::Duration::from_std(within).expect("a short deadline"),
            10,
        ),
    };
    let ended = task.completed_at.expect("ended");
    assert!(
        ended + chrono::Duration::milliseconds(slack) >= due,
        "ended at {ended}, before its deadline {due}"
    );
    (ended - due).as_seconds_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_deadline_fails_is_cancelled_or_alerted_once() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    for (name, deadline) in [
        ("fails", "deadline: {within: 2s}\n"),
        ("alerts", "deadline: {within: 1s, action: alert}\n"),
        ("free", ""),
    ] {
        o.client
            .register_template(&template(name, deadline), None, None)
            .await?;
    }
    let failing = o
        .client
        .create_task(&CreateTask::new("shop_dl", "fails"))
        .await?;
    let deadline = failing.deadline.clone().expect("the template's deadline");
    assert_eq!(
        (deadline.within_ms, deadline.action),
        (2_000, DeadlineAction::Fail)
    );
    // A request's own deadline replaces its template's (none here).
    let mut cancelled = CreateTask::new("shop_dl", "free");
    cancelled.deadline = Some(DeadlineSpec {
        within: "1s".into(),
        action: DeadlineAction::Cancel,
    });
    let cancelled = o.client.create_task(&cancelled).await?;
    let alerted = o
        .client
        .create_task(&CreateTask::new("shop_dl", "alerts"))
        .await?;

    let failed = o.client.wait(failing.id, Duration::from_secs(30)).await?;
    assert_eq!(failed.state, "error");
    let error = failed.error.clone().unwrap_or_default();
    assert_eq!(error["kind"], "deadline_passed", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("deadline passed: 2s after its start, at ")),
        "{error}"
    );
    let late = lateness(&failed, failing.created_at, Duration::from_secs(2));
    eprintln!("deadline figure: fail acted {late:.3}s after the deadline");
    let gone = o.client.wait(cancelled.id, Duration::from_secs(30)).await?;
    assert_eq!(gone.state, "cancelled");
    eprintln!(
        "deadline figure: cancel acted {:.3}s after the deadline",
        lateness(&gone, cancelled.created_at, Duration::from_secs(1))
    );

    // Alerted: it runs on, its deadline spent, once.
    let still = o
        .until(
            Duration::from_secs(30),
            "the alert deadline passed",
            || async {
                let t = o.client.task(alerted.id, None).await?;
                Ok(t.deadline.as_ref().and_then(|d| d.passed_at).map(|_| t))
            },
        )
        .await?;
    assert_eq!(still.state, "running");
    let d = still.deadline.expect("its deadline");
    assert_eq!((d.action, d.at), (DeadlineAction::Alert, None));
    let history = o.client.history(failing.id).await?;
    assert!(
        history.iter().any(|h| h
            .reason
            .as_deref()
            .unwrap_or("")
            .starts_with("deadline passed")),
        "{history:?}"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_counts_from_the_start_and_holds_across_a_restart() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(&template("fails", "deadline: {within: 3s}\n"), None, None)
        .await?;
    // Starts in 2 s: its 3 s count from then, not from its creation.
    let mut later = CreateTask::new("shop_dl", "fails");
    later.delay = Some("2s".into());
    let later = o.client.create_task(&later).await?;
    let now = o
        .client
        .create_task(&CreateTask::new("shop_dl", "fails"))
        .await?;
    // The orchestrator that armed their timers stops; another starts before the deadlines.
    o.stop().await;
    let o = env.orchestrator().await?;
    let failed = o.client.wait(now.id, Duration::from_secs(30)).await?;
    assert_eq!(failed.state, "error");
    eprintln!(
        "deadline figure: after a restart, fail acted {:.3}s after the deadline",
        lateness(&failed, now.created_at, Duration::from_secs(3))
    );
    let started_late = o.client.wait(later.id, Duration::from_secs(30)).await?;
    assert_eq!(started_late.state, "error");
    let start = started_late.run_at.expect("its start");
    lateness(&started_late, start, Duration::from_secs(3));

    // Bad deadlines: refused by name, in a request and in a template.
    let mut bad = CreateTask::new("shop_dl", "fails");
    bad.deadline = Some(DeadlineSpec {
        within: "10ms".into(),
        action: DeadlineAction::Fail,
    });
    let e = o
        .client
        .create_task(&bad)
        .await
        .expect_err("10ms is refused");
    assert_eq!(api_code(&e), (400, "invalid_deadline"), "{e}");
    let e = o
        .client
        .register_template(&template("bad", "deadline: {within: soon}\n"), None, None)
        .await
        .expect_err("`soon` is no duration");
    assert!(e.to_string().contains("deadline.within"), "{e}");
    o.stop().await;
    env.cleanup().await
}
