//! `tasker-orchestrator test-env`: an orchestrator in test mode on a world of its own, for the
//! workflow tests of people who write workflows (docs/testing.md). It creates a database and a
//! queue prefix for this run alone on the configured PostgreSQL and RabbitMQ, starts an
//! orchestrator there whose engine clock the test moves (`/v1/clock`), prints one JSON line
//! on stdout saying where it is ([`Where`]), and serves until its stdin closes (the test
//! process ended, however) or it is signalled; then it deletes the queues and the database.

use std::io::Read;

use anyhow::Context;
use serde::Serialize;
use sqlx::Connection;
use tokio_util::sync::CancellationToken;

use tasker_shared::Config;

use crate::Orchestrator;

/// The line `test-env` prints once it serves: what a test's workers and clients connect to.
#[derive(Debug, Serialize)]
pub struct Where {
    /// The orchestrator's API (no token: it listens on the loopback only).
    pub url: String,
    /// The run's queue prefix: its workers consume `<prefix>.steps.<namespace>`.
    pub queue_prefix: String,
    pub amqp_url: String,
    /// The run's own database (dropped at the end).
    pub database_url: String,
}

/// A database and queue prefix of one run's own (a `test-env` run's, or one test's of this
/// project's suites).
#[derive(Debug)]
pub struct World {
    /// The configuration pointing at them: `database_url` names the run's database,
    /// `queue_prefix` is the run's; the orchestrator runs without tokens.
    pub config: Config,
    admin_url: String,
    database: String,
}

impl World {
    /// Creates the database (from the one `config.database_url` names) and picks the prefix.
    pub async fn create(mut config: Config) -> anyhow::Result<World> {
        let id = uuid::Uuid::now_v7().simple().to_string();
        let short = &id[id.len() - 12..];
        let database = format!("tasker_test_{short}");
        let admin_url = config.database_url.clone();
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .with_context(|| {
                let at = admin_url
                    .parse::<sqlx::postgres::PgConnectOptions>()
                    .map_or_else(
                        |_| "(unparsable url)".to_owned(),
                        |o| format!("{}:{}", o.get_host(), o.get_port()),
                    );
                format!(
                    "connecting to PostgreSQL at {at} (start it with `cargo-make/services.sh \
                     start`, or name yours in DATABASE_URL)"
                )
            })?;
        sqlx::query(&format!("CREATE DATABASE {database}"))
            .execute(&mut admin)
            .await
            .context("creating the test's database")?;
        admin.close().await?;
        config.database_url = with_database(&admin_url, &database);
        config.queue_prefix = format!("test_{short}");
        config.orchestrator.auth = tasker_shared::config::AuthMode::Off;
        config.orchestrator.db_max_connections = 8;
        config.orchestrator.sweep_interval_ms = 200;
        Ok(World {
            config,
            admin_url,
            database,
        })
    }

    /// Deletes the run's queues (its results, dead letters, the steps queues of `namespaces`
    /// and of every namespace it registered or routed a step to) and its database. The
    /// database goes even if the broker cannot be reached (the error is returned after).
    pub async fn remove(self, namespaces: &[String]) -> anyhow::Result<()> {
        let queues = self.remove_queues(namespaces).await;
        let mut admin = sqlx::PgConnection::connect(&self.admin_url).await?;
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.database
        ))
        .execute(&mut admin)
        .await?;
        queues.context("deleting the run's queues")
    }

    async fn remove_queues(&self, namespaces: &[String]) -> anyhow::Result<()> {
        let c = &self.config;
        let p = &c.queue_prefix;
        let mut queues = vec![
            tasker_broker::topology::results_queue(p),
            tasker_broker::topology::dead_letter_queue(p),
        ];
        queues.extend(
            namespaces
                .iter()
                .map(|n| tasker_broker::topology::steps_queue(p, n)),
        );
        if let Ok(mut db) = sqlx::PgConnection::connect(&c.database_url).await {
            let namespaces: Vec<String> = sqlx::query_scalar(
                "SELECT namespace FROM task_templates
                 UNION SELECT namespace FROM steps WHERE namespace IS NOT NULL",
            )
            .fetch_all(&mut db)
            .await
            .unwrap_or_default();
            queues.extend(
                namespaces
                    .iter()
                    .map(|n| tasker_broker::topology::steps_queue(p, n)),
            );
            let _ = db.close().await;
        }
        let broker = tasker_broker::Broker::connect_with(
            &c.amqp_url,
            p,
            "tasker-test-env-cleanup",
            c.tls_ca_file.as_deref(),
        )
        .await?;
        let channel = broker.channel().await?;
        for q in queues {
            let _ = channel
                .queue_delete(q.as_str().into(), Default::default())
                .await;
        }
        broker.close().await;
        Ok(())
    }
}

/// `url` naming database `db` instead.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let base = match base.rfind('/') {
        Some(i) if i > "postgres://".len() => &base[..i],
        _ => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// The subcommand: a world, an orchestrator in test mode on it until stdin closes or
/// `stop` fires, then the world removed.
pub async fn run(config: Config, stop: CancellationToken) -> anyhow::Result<()> {
    let mut world = World::create(config).await?;
    world.config.orchestrator.bind = "127.0.0.1:0".into();
    let served = serve(&world, stop).await;
    let removed = world.remove(&[]).await;
    served.and(removed)
}

async fn serve(world: &World, stop: CancellationToken) -> anyhow::Result<()> {
    let c = &world.config;
    // Said at once rather than retried in the background, as a production orchestrator would:
    // the test waiting on this line should fail now, saying why.
    tasker_broker::Broker::connect_with(
        &c.amqp_url,
        &c.queue_prefix,
        "tasker-test-env",
        c.tls_ca_file.as_deref(),
    )
    .await
    .with_context(|| {
        format!(
            "connecting to RabbitMQ at {} (start it with `cargo-make/services.sh start`, \
             or name yours in AMQP_URL)",
            tasker_broker::redact(&c.amqp_url)
        )
    })?
    .close()
    .await;
    let orchestrator = Orchestrator::start_test(c.clone())
        .await
        .context("starting the orchestrator in test mode")?;
    let listener = tokio::net::TcpListener::bind(&c.orchestrator.bind).await?;
    let line = Where {
        url: format!("http://{}", listener.local_addr()?),
        queue_prefix: c.queue_prefix.clone(),
        amqp_url: c.amqp_url.clone(),
        database_url: c.database_url.clone(),
    };
    println!("{}", serde_json::to_string(&line)?);
    let cancel = stop.child_token();
    let on_eof = cancel.clone();
    std::thread::spawn(move || {
        // The test's process holds our stdin: when it ends (or closes it), so do we.
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        on_eof.cancel();
    });
    orchestrator.run(listener, cancel).await?;
    Ok(())
}
