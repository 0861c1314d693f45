//! A worker with exactly the credentials docs/auth.md recommends — a broker user that may read
//! only its namespace's steps queues and write only results, and a `write` token for that
//! namespace — starts cleanly: no ERROR and no WARN line in its log up to the moment it
//! consumes. (It used to try declaring the dead-letter queue, which its user may not, and log
//! the broker's ACCESS_REFUSED twice at every start.)

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tasker::{TestEnv, workspace_binary};
use tasker_orchestration::store::{NewToken, Scope};
use tasker_shared::config::AuthMode;
use tasker_shared::namespaces::Patterns;
use tokio::io::{AsyncBufReadExt, BufReader};

const NAMESPACE: &str = "clean_start";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_least_privilege_worker_starts_with_no_error_or_warning() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    // Its broker user and its token, of one name, for its namespace only (made first: an
    // orchestrator that requires tokens does not start without one).
    let (user, amqp_url) = env.worker_user("clean", &[NAMESPACE])?;
    let patterns = Patterns::parse(NAMESPACE)?;
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    let token = store
        .create_token(&NewToken {
            name: &user,
            scope: Scope::Write,
            namespaces: Some(&patterns),
            expires_at: None,
            created_by: Some("test"),
            minter: None,
        })
        .await?
        .token;
    let o = env.orchestrator().await?;
    let dir = std::env::temp_dir().join(format!("tasker-clean-start-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("pair.yaml"),
        format!(
            "namespace: {NAMESPACE}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
             handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
        ),
    )?;

    let mut worker = tokio::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .arg("--templates")
        .arg(&dir)
        .args(["--health-port", "0", "--orchestrator-url", &o.url()])
        .env("AMQP_URL", &amqp_url)
        .env("TASKER_QUEUE_PREFIX", &env.config.queue_prefix)
        .env("TASKER_WORKER__API_TOKEN", &token)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(worker.stderr.take().context("stderr")?).lines();
    let mut log = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            let consuming = line.contains("worker consuming");
            log.push(line);
            if consuming {
                return anyhow::Ok(());
            }
        }
        anyhow::bail!("the worker exited before consuming")
    })
    .await
    .with_context(|| format!("the worker did not consume within 60 s: {log:#?}"))??;
    let noisy: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("ERROR") || l.contains("WARN"))
        .collect();
    assert!(
        noisy.is_empty(),
        "a least-privilege worker logged at start: {noisy:#?}\n(whole log: {log:#?})"
    );
    assert!(
        log.iter().any(|l| l.contains("template registered")),
        "it registered its template with its token: {log:#?}"
    );

    worker.kill().await?;
    o.stop().await;
    std::fs::remove_dir_all(&dir)?;
    env.cleanup().await
}
