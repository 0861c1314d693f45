//! `tasker alerts` as a user runs it: set a rule (Tasker's secret for its webhook sink printed
//! once), list and show it with its state and what it counted, a bad setting refused with its
//! field, delete — and a rule that fires, seen firing in `show`.

use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv};

use super::{tasker, tasker_with};

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

/// `tasker alerts apply`: a namespace's rules declared in a file (a webhook sink's secret from
/// an environment variable), applied again after a change (updated; a rule no file declares
/// kept, then removed by `--prune`, another namespace's left alone); a rule name another
/// namespace holds refused; a file that cannot be applied refused before anything is saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_applies_a_namespaces_alert_file_and_prunes_what_it_no_longer_declares()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let url = o.url();
    let file = std::env::temp_dir().join(format!("tasker-alerts-{}.yaml", uuid::Uuid::now_v7()));
    let path = file.to_str().expect("a UTF-8 path");
    let secret = [("SHOP_ALERT_SECRET", "s3cret-of-the-file")];
    let names = |all: &[tasker_client::Alert]| {
        let mut n: Vec<String> = all
            .iter()
            .map(|a| format!("{}/{}", a.namespace, a.name))
            .collect();
        n.sort();
        n
    };

    // Another namespace's rule, and one of shop's set by hand.
    for (name, namespace) in [("billing_letters", "billing"), ("by_hand", "shop")] {
        let set = tasker(
            &url,
            &[
                "alerts",
                "set",
                name,
                "--namespace",
                namespace,
                "--when",
                "dead_letters",
                "--slack",
                "http://127.0.0.1:9/s",
            ],
            None,
        )?;
        assert_eq!(set.code, Some(0), "{}", set.stderr);
    }

    std::fs::write(
        &file,
        "namespace: shop\nalerts:\n  stuck:\n    when: {kind: steps_waiting, longer_than: 2m}\n    sink: {kind: webhook, url: \"http://127.0.0.1:9/hook\"}\n    secret_env: SHOP_ALERT_SECRET\n  letters:\n    when: {kind: dead_letters, count: 3}\n    sink: {kind: email, to: [ops@example.com]}\n  charges:\n    when: {kind: failures, template: charge, count: 5, within: 1m}\n    sink: {kind: slack, url: \"http://127.0.0.1:9/s\"}\n",
    )?;
    // Without the secret's variable: refused before anything is saved.
    let unset = tasker(&url, &["alerts", "apply", path], None)?;
    assert_eq!(unset.code, Some(2), "{}", unset.stdout);
    assert!(
        unset.stderr.contains("SHOP_ALERT_SECRET is not set"),
        "{}",
        unset.stderr
    );
    assert_eq!(names(&o.client.alerts().await?).len(), 2);

    let applied = tasker_with(&url, &["alerts", "apply", path], None, &secret)?;
    // The email sink needs the orchestrators' SMTP server: that one rule is refused, by name.
    assert_eq!(applied.code, Some(1), "{}", applied.stderr);
    assert!(
        applied.stderr.contains("alert letters refused") && applied.stderr.contains("smtp"),
        "{}",
        applied.stderr
    );
    for line in [
        "created alert charges",
        "created alert stuck",
        "kept alert by_hand of shop: no file declares it (--prune removes it)",
    ] {
        assert!(
            applied.stdout.contains(line),
            "{line:?} in {}",
            applied.stdout
        );
    }
    // The secret was the variable's: Tasker made none to print.
    assert!(!applied.stdout.contains("secret"), "{}", applied.stdout);
    let stuck = o.client.alert("stuck").await?;
    assert_eq!(stuck.when.longer_than.as_deref(), Some("2m"));

    // Changed: letters to Slack, stuck gone, and a name billing holds.
    std::fs::write(
        &file,
        "namespace: shop\nalerts:\n  letters:\n    when: {kind: dead_letters, count: 3}\n    sink: {kind: slack, url: \"http://127.0.0.1:9/s\"}\n    suppress: 1h\n  charges:\n    when: {kind: failures, template: charge, count: 6, within: 1m}\n    sink: {kind: slack, url: \"http://127.0.0.1:9/s\"}\n  billing_letters:\n    when: {kind: dead_letters}\n    sink: {kind: slack, url: \"http://127.0.0.1:9/s\"}\n",
    )?;
    let pruned = tasker(&url, &["alerts", "apply", "--prune", path], None)?;
    assert_eq!(pruned.code, Some(1), "{}", pruned.stdout);
    assert!(
        pruned
            .stderr
            .contains("alert billing_letters is a rule of namespace billing"),
        "{}",
        pruned.stderr
    );
    for line in [
        "created alert letters",
        "updated alert charges",
        "removed alert by_hand (no file declares it)",
        "removed alert stuck (no file declares it)",
    ] {
        assert!(
            pruned.stdout.contains(line),
            "{line:?} in {}",
            pruned.stdout
        );
    }
    assert_eq!(
        names(&o.client.alerts().await?),
        ["billing/billing_letters", "shop/charges", "shop/letters"]
    );
    assert_eq!(o.client.alert("charges").await?.when.count, Some(6));
    assert_eq!(o.client.alert("letters").await?.suppress_seconds, 3600);

    // A bad file: its line, nothing changed.
    std::fs::write(
        &file,
        "namespace: shop\nalerts:\n  letters:\n    when: {kind: dead_letters}\n    sink: {kind: pager, url: x}\n",
    )?;
    let bad = tasker(&url, &["alerts", "apply", "--prune", path], None)?;
    assert_ne!(bad.code, Some(0));
    assert!(bad.stderr.contains(":5"), "{}", bad.stderr);
    assert_eq!(names(&o.client.alerts().await?).len(), 3);
    std::fs::remove_file(&file)?;
    o.stop().await;
    env.cleanup().await
}
