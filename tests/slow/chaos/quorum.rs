//! Losing a broker node: with quorum queues on a 3-node RabbitMQ cluster, the node leading the
//! steps and results queues is SIGKILLed under load and nothing is lost; then a message handed
//! back past the delivery limit goes to the dead letters.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use tokio::process::Command;
use uuid::Uuid;

use tasker::{TestEnv, repo_root};
use tasker_broker::{Broker, Outgoing, topology};

use super::{Cluster, SERIAL, applied_twice, create, finished, note, recovery};
use crate::common::{self, Scenario, free_port};

/// Output of `services.sh ARGS` (its stdout, trimmed), which must succeed.
async fn services_out(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(repo_root().join("cargo-make/services.sh"))
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "services.sh {args:?} failed: {}",
        out.status
    );
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Creates the tasks numbered `range` of the quorum run: every sixth a `slow_chain` of 300 ms
/// steps (mid-run when a fault comes), the rest `linear`.
async fn wave(cluster: &Cluster, range: std::ops::Range<i64>) -> anyhow::Result<Vec<Uuid>> {
    let mut ids = Vec::new();
    for i in range {
        let (template, context) = if i % 6 == 0 {
            ("slow_chain", json!({"sleep_ms": 300}))
        } else {
            ("linear", json!({"value": i}))
        };
        let s = Scenario {
            name: template.into(),
            template: template.into(),
            context,
            state: "complete".into(),
            result: None,
            steps: BTreeMap::new(),
        };
        ids.push(create(cluster, 2_000_000 + i as usize, "rust_examples", &s).await?);
    }
    Ok(ids)
}

/// With `broker.queue_type = "quorum"` on a 3-node RabbitMQ cluster (`services.sh
/// cluster-start`), the node leading the steps and results queues is SIGKILLed under load:
/// orchestrators and the worker move to another node, every task completes, none is lost and
/// no transition is applied twice. Then a message redelivered past the delivery limit (a
/// consumer that keeps handing it back) goes to the dead letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_broker_node_that_leads_the_queues_loses_nothing() -> anyhow::Result<()> {
    let _one_at_a_time = SERIAL.lock().await;
    let export = services_out(&["cluster-start"]).await?;
    let urls = export
        .lines()
        .find_map(|l| l.strip_prefix("export TASKER_CLUSTER_AMQP_URL="))
        .context("cluster-start printed no URL")?
        .trim_matches('"')
        .to_owned();
    let logs = common::keep_logs("quorum");
    let outcome = quorum_run(&urls).await;
    match &outcome {
        // Kept only to explain a failure, unless someone asked for them.
        Ok(()) if std::env::var_os("TASKER_TEST_LOG_DIR").is_none() => {
            let _ = std::fs::remove_dir_all(&logs);
        }
        Ok(()) => {}
        Err(_) => eprintln!("the logs of every process of this run: {}", logs.display()),
    }
    outcome
}

/// The body of [`losing_the_broker_node_that_leads_the_queues_loses_nothing`] on the cluster
/// of `urls`.
async fn quorum_run(urls: &str) -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.amqp_url = urls.to_owned();
    env.config.broker.queue_type = tasker_shared::config::QueueType::Quorum;
    let cfg = env.config.clone();
    let quorum = [
        ("TASKER_BROKER__QUEUE_TYPE", "quorum"),
        (
            "RUST_LOG",
            "info,tasker_broker=debug,tasker_worker=debug,tasker_orchestration=debug",
        ),
    ];
    let mut cluster = Cluster::new(env);
    for _ in 0..2 {
        let o = common::start_orchestrator_with(&cluster.env, free_port()?, &quorum).await?;
        cluster.orchestrators.push(o);
    }
    let url = format!("http://127.0.0.1:{}", cluster.orchestrators[0].port);
    let w = common::start_worker_with(&cluster.env, "rust", "rust-quorum", &url, &quorum).await?;
    cluster.workers.push(("rust", w));
    let steps = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
    let results = topology::results_queue(&cfg.queue_prefix);
    let types = services_out(&["cluster-ctl", "1", "list_queues", "name", "type"]).await?;
    for q in [&steps, &results] {
        anyhow::ensure!(
            types
                .lines()
                .any(|l| l.starts_with(q.as_str()) && l.ends_with("quorum")),
            "{q} is not a quorum queue: {types}"
        );
    }
    let mut ids = Vec::new();
    // Work in flight when the node goes: slow chains mid-run, linear tasks queued.
    ids.extend(wave(&cluster, 0..60).await?);
    let leader = services_out(&["cluster-leader", &steps]).await?;
    let results_leader = services_out(&["cluster-leader", &results]).await?;
    note(&format!(
        "steps queue led by {leader}, results queue by {results_leader}"
    ));
    let node = leader
        .strip_prefix("tasker")
        .and_then(|n| n.split('@').next())
        .context("leader's node number")?
        .to_owned();
    let started = Instant::now();
    services_out(&["cluster-kill", &node]).await?;
    note(&format!("SIGKILLed {leader}"));
    // Every consumer is back on a surviving node within its window: the worker on the steps
    // queue, both orchestrators on the results queue.
    let survivor = if node == "1" { "2" } else { "1" };
    consumers_back(
        survivor,
        &[(&steps, 1), (&results, 2)],
        Duration::from_secs(30),
    )
    .await?;
    note(&format!(
        "consumers re-established {:?} after the kill",
        started.elapsed()
    ));
    // More work while it is down, through whichever orchestrator answers.
    ids.extend(wave(&cluster, 60..120).await?);
    let mut probe = 0;
    let took = recovery(&cluster, &mut probe, started).await?;
    note(&format!(
        "a broker node lost (quorum queues): a new task completed {took:?} after the kill"
    ));
    for id in &ids {
        let t = finished(&cluster, *id, Duration::from_secs(180)).await?;
        anyhow::ensure!(t.state == "complete", "task {id} ended {}", t.state);
    }
    let pool = sqlx::PgPool::connect(&cfg.database_url).await?;
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_one(&pool)
        .await?;
    let twice = applied_twice(&pool, false).await?;
    println!(
        "chaos report (quorum): {}",
        json!({"tasks": ids.len() + probe, "lost": ids.len() as i64 - found,
               "transitions_applied_twice": twice.len(), "node_killed": leader,
               "recovery_s": took.as_secs_f64()})
    );
    anyhow::ensure!(
        found == ids.len() as i64,
        "tasks lost: {found} of {}",
        ids.len()
    );
    anyhow::ensure!(twice.is_empty(), "transitions applied twice: {twice:?}");
    services_out(&["cluster-node-start", &node]).await?;

    // A message nobody can take: handed back again and again until the delivery limit sends
    // it to the dead letters, where the orchestrators keep it.
    let broker = Broker::connect(urls, &cfg.queue_prefix, "chaos-poison")
        .await?
        .quorum(true);
    broker.declare(&["quorum_poison".to_owned()]).await?;
    let queue = topology::steps_queue(&cfg.queue_prefix, "quorum_poison");
    broker
        .publisher()
        .await?
        .publish_all(&[Outgoing {
            queue: queue.clone(),
            payload: b"{\"handed back\": true}".to_vec(),
        }])
        .await?;
    let mut deliveries = broker.consume(&queue, "chaos-poison", 1).await?;
    let mut handed_back = 0u32;
    let mut check = tokio::time::interval(Duration::from_millis(200));
    let kept = async {
        loop {
            tokio::select! {
                Some(d) = futures_util::StreamExt::next(&mut deliveries) => {
                    d?.nack(tasker_broker::BasicNackOptions { requeue: true, ..Default::default() })
                        .await?;
                    handed_back += 1;
                }
                _ = check.tick() => {
                    let page = cluster.client(0).dead_letters(None, Some(50)).await?;
                    if let Some(d) = page.dead_letters.iter().find(|d| d.queue.as_deref() == Some(queue.as_str())) {
                        return anyhow::Ok(d.clone());
                    }
                }
            }
        }
    };
    let dead = tokio::time::timeout(Duration::from_secs(60), kept)
        .await
        .context("the message never reached the dead letters")??;
    note(&format!(
        "handed back {handed_back} times, then dead-lettered: {}",
        dead.reason
    ));
    anyhow::ensure!(
        (tasker_broker::DELIVERY_LIMIT as u32..=tasker_broker::DELIVERY_LIMIT as u32 + 1)
            .contains(&handed_back),
        "dead-lettered after {handed_back} deliveries"
    );
    broker.close().await;
    pool.close().await;
    cluster.shutdown().await?;
    services_out(&["cluster-stop"]).await?;
    Ok(())
}

/// Waits until each of `queues` has at least its number of consumers, as cluster node
/// `node` sees them, for at most `window`; fails naming the queues still short.
async fn consumers_back(
    node: &str,
    queues: &[(&str, usize)],
    window: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + window;
    loop {
        let listed = services_out(&["cluster-ctl", node, "list_queues", "name", "consumers"])
            .await
            .unwrap_or_default();
        let short: Vec<String> = queues
            .iter()
            .filter(|(q, want)| {
                let have = listed
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .find(|(name, _)| name == q)
                    .and_then(|(_, n)| n.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                have < *want
            })
            .map(|(q, want)| format!("{q} (wants {want})"))
            .collect();
        if short.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no consumer back on {} within {window:?} after the node was lost: {listed}",
            short.join(", ")
        );
        // Polling rabbitmqctl: the broker offers no notification of a consumer's arrival.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
