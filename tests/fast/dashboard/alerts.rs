//! The alerts page (`tests/dashboard/alerts.mjs`): the rules listed firing first, each with
//! what it watches, its state and count, its sink and its notices.

use super::*;
use tasker_client::{AlertCondition, AlertKind, AlertSink, PutAlert};

const SCRIPT: &str = "alerts.mjs";

fn rule(kind: AlertKind, longer_than: Option<&str>) -> PutAlert {
    PutAlert {
        namespace: "dash_al".into(),
        when: AlertCondition {
            kind,
            template: None,
            schedule: None,
            count: None,
            within: None,
            longer_than: longer_than.map(Into::into),
        },
        // Nobody listens there: each notice fails, and is tried again.
        sink: AlertSink::Slack {
            url: "http://127.0.0.1:9/slack".into(),
        },
        secret: None,
        suppress: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_page_lists_the_rules_firing_first_in_a_real_browser() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    // A step no worker serves waits: `stuck` fires once it has waited 1 s; `quiet` never does.
    o.client
        .register_template(
            "namespace: dash_al\nname: order\nversion: '1'\nsteps:\n  - name: pack\n    handler: nobody\n",
            None,
            None,
        )
        .await?;
    o.client
        .put_alert("a-quiet", &rule(AlertKind::DeadLetters, None))
        .await?;
    o.client
        .put_alert("stuck", &rule(AlertKind::StepsWaiting, Some("1s")))
        .await?;
    o.client
        .create_task(&CreateTask::new("dash_al", "order"))
        .await?;
    o.until(Duration::from_secs(15), "the rule firing", || async {
        Ok((o.client.alert("stuck").await?.state == "firing").then_some(()))
    })
    .await?;

    let report = clean_tour(
        SCRIPT,
        &[("TASKER_URL", o.url()), ("FIRING", "stuck".into())],
    )
    .await?;
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["stuck", "a-quiet"], "firing first: {report}");
    assert_eq!(
        (&rows[0]["state"], &rows[0]["when"], &rows[0]["observed"]),
        (
            &json!("firing"),
            &json!("1 steps_waiting longer than 1s"),
            &json!("1")
        ),
        "{report}"
    );
    assert_eq!(
        rows[0]["sink"], "slack http://127.0.0.1:9/slack",
        "{report}"
    );
    assert_eq!(
        (&rows[1]["state"], &rows[1]["when"]),
        (&json!("ok"), &json!("1 dead_letters within 5m")),
        "{report}"
    );
    assert_eq!(report["navCurrent"], "page", "{report}");
    assert!(
        report["status"]
            .as_str()
            .unwrap_or_default()
            .starts_with("1 firing of 2"),
        "{report}"
    );
    o.stop().await;
    env.cleanup().await
}
