//! `tasker webhooks` as a user runs it: set one with a secret read from a file, see Tasker's
//! secret printed once when it makes one, list and show without any secret, a bad setting
//! refused with its field, delete.

use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv};
use uuid::Uuid;

use super::tasker;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sets_lists_shows_and_deletes_webhooks_and_prints_a_made_secret_once()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = RunningOrchestrator::start(env.config.clone()).await?;
    let url = o.url();

    let file = std::env::temp_dir().join(format!("tasker-secret-{}", Uuid::now_v7()));
    std::fs::write(&file, "from-a-file-0123456789\n")?;
    let at_file = format!("@{}", file.display());
    let set = tasker(
        &url,
        &[
            "webhooks",
            "set",
            "gh",
            "--namespace",
            "ci",
            "--format",
            "github",
            "--secret",
            &at_file,
        ],
        None,
    )?;
    std::fs::remove_file(&file)?;
    assert_eq!(set.code, Some(0), "{}", set.stderr);
    assert!(set.stdout.contains("webhook gh created"), "{}", set.stdout);
    assert!(
        set.stdout.contains("github.<X-GitHub-Event>"),
        "{}",
        set.stdout
    );
    assert!(
        !set.stdout.contains("from-a-file"),
        "a given secret is printed back: {}",
        set.stdout
    );
    let row: Option<(String,)> = sqlx::query_as("SELECT secret FROM webhooks WHERE name = 'gh'")
        .fetch_optional(o.shared.store.pool())
        .await?;
    assert_eq!(
        row,
        Some(("from-a-file-0123456789".to_owned(),)),
        "the file's first line, trimmed"
    );

    // Made by Tasker: printed this once.
    let made = tasker(
        &url,
        &["--json", "webhooks", "set", "orders", "--namespace", "shop"],
        None,
    )?;
    assert_eq!(made.code, Some(0), "{}", made.stderr);
    let doc: Value = serde_json::from_str(&made.stdout)?;
    let secret = doc["secret"].as_str().unwrap_or_default().to_owned();
    assert!(secret.starts_with("whk_"), "{doc}");

    let list = tasker(&url, &["webhooks", "list"], None)?;
    assert_eq!(list.code, Some(0), "{}", list.stderr);
    assert!(
        list.stdout.contains("orders") && list.stdout.contains("gh"),
        "{}",
        list.stdout
    );
    let show = tasker(&url, &["--json", "webhooks", "show", "orders"], None)?;
    let shown: Value = serde_json::from_str(&show.stdout)?;
    assert_eq!(
        (&shown["namespace"], shown.get("secret")),
        (&Value::from("shop"), None)
    );
    for out in [&list, &show] {
        assert!(
            !out.stdout.contains(&secret),
            "a secret shown again: {}",
            out.stdout
        );
    }

    let bad = tasker(
        &url,
        &[
            "webhooks",
            "set",
            "x",
            "--namespace",
            "shop",
            "--tolerance",
            "2h",
        ],
        None,
    )?;
    assert_ne!(bad.code, Some(0));
    assert!(
        bad.stderr.contains("invalid_webhook") && bad.stderr.contains("tolerance"),
        "{}",
        bad.stderr
    );

    let gone = tasker(&url, &["webhooks", "delete", "orders"], None)?;
    assert_eq!(gone.code, Some(0), "{}", gone.stderr);
    let missing = tasker(&url, &["webhooks", "show", "orders"], None)?;
    assert!(
        missing.stderr.contains("webhook_not_found"),
        "{}",
        missing.stderr
    );
    o.stop().await;
    env.cleanup().await
}
