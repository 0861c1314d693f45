//! TLS end to end, on the local services' TLS side (`cargo-make/services.sh tls-start`: a
//! throwaway CA, a PostgreSQL that refuses plain connections, RabbitMQ's amqps:// listener): an
//! orchestrator serving https://, a Rust worker in process and a Python worker as a process reach
//! PostgreSQL with `sslmode=verify-full` and RabbitMQ over amqps://, checking certificates against
//! the CA; the Rust client and the CLI check the orchestrator's. Without the CA every one of them
//! refuses the connection.

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use sqlx::Connection;
use tasker::{TestEnv, repo_root, workspace_binary};
use tasker_orchestration::Orchestrator;

/// What `services.sh tls-start` hands out.
struct LocalTls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    database_url: String,
    amqp_url: String,
}

/// Starts the TLS side of the local services (idempotent) and reads its settings; bash undoes
/// the shell quoting of the `export` lines.
async fn local_tls() -> anyhow::Result<LocalTls> {
    let script = repo_root().join("cargo-make/services.sh");
    let out = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(
            r#"set -e; eval "$("$0" tls-start)"
            printf '%s\n' "$TASKER_LOCAL_TLS_CA_FILE" "$TASKER_LOCAL_TLS_CERT_FILE" \
              "$TASKER_LOCAL_TLS_KEY_FILE" "$TASKER_LOCAL_TLS_DATABASE_URL" "$TASKER_LOCAL_TLS_AMQP_URL""#,
        )
        .arg(&script)
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "services.sh tls-start failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let v: Vec<&str> = text.lines().collect();
    anyhow::ensure!(v.len() == 5 && v.iter().all(|l| !l.is_empty()), "{text}");
    Ok(LocalTls {
        ca: v[0].into(),
        cert: v[1].into(),
        key: v[2].into(),
        database_url: v[3].into(),
        amqp_url: v[4].into(),
    })
}

/// A test environment on the TLS services, its orchestrator serving https:// with the local
/// certificate.
async fn tls_env(tls: &LocalTls) -> anyhow::Result<TestEnv> {
    let mut config = tasker_shared::Config::load(None)?;
    config.database_url = tls.database_url.clone();
    config.amqp_url = tls.amqp_url.clone();
    config.tls_ca_file = Some(tls.ca.clone());
    config.orchestrator.tls_cert_file = Some(tls.cert.clone());
    config.orchestrator.tls_key_file = Some(tls.key.clone());
    TestEnv::on(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_end_to_end_with_tls_on_every_connection() -> anyhow::Result<()> {
    let tls = local_tls().await?;
    let mut env = tls_env(&tls).await?;
    // Contexts above 64 bytes travel by reference: the workers fetch them over https://.
    env.config.orchestrator.inline_max_bytes = 64;
    let o = env.orchestrator().await?;
    assert!(o.url().starts_with("https://"), "{}", o.url());
    // Browsers are told to come back over HTTPS only.
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&tls.ca)?)?;
    let http = reqwest::Client::builder()
        .tls_certs_merge(vec![ca])
        .build()?;
    let health = http.get(format!("{}/health", o.url())).send().await?;
    assert_eq!(
        health
            .headers()
            .get("strict-transport-security")
            .map(|v| v.as_bytes()),
        Some(&b"max-age=31536000"[..])
    );
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let python = common::start_worker_with(
        &env,
        "python",
        "tls-python",
        &o.url(),
        &[("TASKER_TLS_CA_FILE", tls.ca.to_str().context("CA path")?)],
    )
    .await?;

    let padding = "x".repeat(200);
    for namespace in ["rust_examples", "python_examples"] {
        let task = o
            .run_task(namespace, "linear", json!({"value": 6, "padding": padding}))
            .await?;
        assert_eq!(task.state, "complete", "{namespace}: {task:?}");
        assert_eq!(
            task.result,
            Some(json!({"halve": {"value": 242}})),
            "{namespace}"
        );
    }

    // Every connection to the test's database is encrypted (the cluster refuses plain ones).
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let (encrypted, plain): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl)
         FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
         WHERE a.datname = current_database()",
    )
    .fetch_one(&mut db)
    .await?;
    assert!(
        encrypted >= 2 && plain == 0,
        "{encrypted} TLS, {plain} plain"
    );
    db.close().await?;
    let refused = sqlx::PgConnection::connect(
        &env.config
            .database_url
            .replace("sslmode=verify-full", "sslmode=disable"),
    )
    .await
    .expect_err("the TLS cluster refuses a plain connection");
    assert!(refused.to_string().contains("no encryption"), "{refused}");

    // The CLI checks the orchestrator's certificate against the CA it is given, and refuses an
    // orchestrator it cannot verify (exit code 5: unreachable).
    let id = o.client.tasks(&Default::default()).await?.tasks[0]
        .id
        .to_string();
    let cli = |with_ca: bool| {
        let mut cmd = std::process::Command::new(workspace_binary("tasker")?);
        cmd.args(["--url", &o.url(), "show", &id, "--json"])
            .env_remove("TASKER_TLS_CA_FILE");
        if with_ca {
            cmd.arg("--tls-ca-file").arg(&tls.ca);
        }
        anyhow::Ok(cmd.output()?)
    };
    let shown = cli(true)?;
    assert!(shown.status.success(), "{shown:?}");
    let shown: Value = serde_json::from_slice(&shown.stdout)?;
    assert_eq!(shown["task"]["state"], "complete", "{shown}");
    let refused = cli(false)?;
    assert_eq!(refused.status.code(), Some(5), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");

    // Nor do the Rust client and the broker connection trust the CA unless told to.
    let untrusting = tasker_client::Client::new(&o.url());
    let err = untrusting.tasks(&Default::default()).await.unwrap_err();
    assert!(matches!(err, tasker_client::Error::Http(_)), "{err:?}");
    let err = tasker_broker::Broker::connect(&tls.amqp_url, &env.config.queue_prefix, "no-ca")
        .await
        .expect_err("amqps:// without the CA");
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");

    drop(python);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_and_key_that_do_not_belong_together_stop_the_start() -> anyhow::Result<()> {
    let tls = local_tls().await?;
    let mut env = tls_env(&tls).await?;
    // The CA's key is not the key of the server's certificate.
    let ca_key = tls.ca.with_file_name("ca.key");
    env.config.orchestrator.tls_key_file = Some(ca_key.clone());
    let err = Orchestrator::start(env.config.clone())
        .await
        .expect_err("a key of another certificate");
    let message = err.to_string();
    assert!(
        message.contains("server.pem") && message.contains("ca.key"),
        "{message}"
    );
    // An https:// orchestrator still answers a client that waits longer than its handshake
    // timeout between requests: one that never finishes a handshake holds up nobody.
    env.config.orchestrator.tls_key_file = Some(tls.key.clone());
    let o = env.orchestrator().await?;
    let silent = tokio::net::TcpStream::connect(o.addr).await?;
    let listed = tokio::time::timeout(Duration::from_secs(5), o.client.tasks(&Default::default()))
        .await
        .context("listing while a silent client holds a connection")??;
    assert!(listed.tasks.is_empty());
    drop(silent);
    o.stop().await;
    env.cleanup().await
}
