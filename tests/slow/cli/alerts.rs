//! `tasker alerts` as a user runs it: set a rule (Tasker's secret for its webhook sink printed
//! once), list and show it with its state and what it counted, a bad setting refused with its
//! field, delete — and a rule that fires, seen firing in `show`.

use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv};

use super::tasker;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sets_shows_and_deletes_alert_rules_and_shows_one_firing() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let url = o.url();

    let made = tasker(
        &url,
        &[
            "--json",
            "alerts",
            "set",
            "stuck",
            "--namespace",
            "shop",
            "--when",
            "steps_waiting",
            "--longer-than",
            "1s",
            "--webhook",
            "http://127.0.0.1:9/nobody",
        ],
        None,
    )?;
    assert_eq!(made.code, Some(0), "{}", made.stderr);
    let doc: Value = serde_json::from_str(&made.stdout)?;
    assert!(
        doc["secret"]
            .as_str()
            .unwrap_or_default()
            .starts_with("whk_"),
        "{doc}"
    );
    let slack = tasker(
        &url,
        &[
            "alerts",
            "set",
            "letters",
            "--namespace",
            "shop",
            "--when",
            "dead_letters",
            "--slack",
            "http://127.0.0.1:9/slack",
            "--suppress",
            "1h",
        ],
        None,
    )?;
    assert_eq!(slack.code, Some(0), "{}", slack.stderr);
    assert!(
        slack.stdout.contains("alert letters created"),
        "{}",
        slack.stdout
    );
    assert!(
        slack.stdout.contains("suppress    3600s"),
        "{}",
        slack.stdout
    );
    assert!(!slack.stdout.contains("secret"), "{}", slack.stdout);

    // A step no worker takes waits past 1 s: the rule fires (its sink is down: a failed try).
    o.client
        .register_template(
            "namespace: shop\nname: order\nversion: '1'\nsteps:\n  - name: pack\n    handler: nobody\n",
            None,
            None,
        )
        .await?;
    o.client
        .create_task(&tasker_client::CreateTask::new("shop", "order"))
        .await?;
    o.until(
        std::time::Duration::from_secs(15),
        "the rule firing",
        || async {
            let a = o.client.alert("stuck").await?;
            Ok((a.state == "firing").then_some(()))
        },
    )
    .await?;
    let show = tasker(&url, &["alerts", "show", "stuck"], None)?;
    assert_eq!(show.code, Some(0), "{}", show.stderr);
    for line in [
        "when        1 steps_waiting waiting longer than 1s",
        "state       firing (1 seen)",
    ] {
        assert!(show.stdout.contains(line), "{line:?} in {}", show.stdout);
    }
    let list = tasker(&url, &["alerts", "list"], None)?;
    assert!(
        list.stdout.contains("stuck")
            && list.stdout.contains("firing")
            && list.stdout.contains("letters"),
        "{}",
        list.stdout
    );

    // A bad setting: refused with its field, nothing saved.
    let bad = tasker(
        &url,
        &[
            "alerts",
            "set",
            "bad",
            "--namespace",
            "shop",
            "--when",
            "failures",
            "--within",
            "3d",
            "--slack",
            "http://127.0.0.1:9/x",
        ],
        None,
    )?;
    assert_ne!(bad.code, Some(0));
    assert!(
        bad.stderr.contains("invalid_alert") && bad.stderr.contains("when.within"),
        "{}",
        bad.stderr
    );

    let gone = tasker(&url, &["alerts", "delete", "stuck"], None)?;
    assert!(
        gone.stdout.contains("alert stuck removed"),
        "{}",
        gone.stdout
    );
    let missing = tasker(&url, &["alerts", "show", "stuck"], None)?;
    assert_ne!(missing.code, Some(0));
    assert!(
        missing.stderr.contains("alert_not_found"),
        "{}",
        missing.stderr
    );
    o.stop().await;
    env.cleanup().await
}
