//! Steps dispatched and not run yet: a step that never started survives a worker outage longer
//! than its timeout; a queue timeout fails a step nobody started; a healthy step running past
//! the visibility timeout runs once; a step whose orchestrator died between commit and publish
//! is sent again; a round the broker returned while connected goes out at the next sweep; a
//! result batch committed as its broker session ends still sends the steps it made ready.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::{TestEnv, steps_by_name};
use tasker_broker::{Broker, topology};
use tasker_client::CreateTask;

use super::{backdate, create, step_id, sweeps};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_never_started_survives_an_outage_longer_than_its_timeout() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let mut events = o.events().subscribe();
    // `double` may run 30 s; no worker has been up for an hour.
    let task = create(&o, "linear", 6).await?;
    let root = step_id(&o, task, "double").await?;
    backdate(&o, root).await?;
    sweeps(&mut events, 2).await?;
    let steps = steps_by_name(&o.client, task).await?;
    assert_eq!(steps["double"].state, "enqueued");
    assert_eq!(steps["double"].attempt, 1);

    let worker = env.rust_worker();
    let done = o.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_timeout_fails_a_step_no_worker_started() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let task = create(&o, "queue_timeout", 1).await?;
    let only = step_id(&o, task, "only").await?;
    backdate(&o, only).await?;
    let done = o.wait(task).await?;
    assert_eq!(done.state, "error", "{done:?}");
    let steps = steps_by_name(&o.client, task).await?;
    let error = steps["only"].error.clone().unwrap_or_default();
    assert_eq!(error["kind"], "queue_timeout", "{error}");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_step_running_past_the_visibility_timeout_runs_once() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.visibility_timeout_ms = 300;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The slow step runs seven visibility timeouts (and some ten sweeps) long.
    let task = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "slow_chain").context(json!({"sleep_ms": 2100})),
        )
        .await?;
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let received = worker
        .stats
        .received
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        received, 2,
        "each of the two steps delivered once, not re-published"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_orchestrator_died_before_publishing_is_sent_again() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.visibility_timeout_ms = 300;
    let o = env.orchestrator().await?;
    let mut events = o.events().subscribe();
    let task = create(&o, "linear", 6).await?;
    let root = step_id(&o, task, "double").await?;
    // As if the orchestrator that dispatched it had died between commit and publish: the
    // message never reached the queue, and that orchestrator no longer heartbeats.
    sweeps(&mut events, 1).await?;
    let cfg = &env.config;
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "loser").await?;
    let channel = broker.channel().await?;
    let queue = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
    let purged = channel
        .queue_purge(queue.as_str().into(), Default::default())
        .await?;
    assert_eq!(purged, 1, "the root step's message was in its queue");
    sqlx::query("UPDATE steps SET dispatched_by = $2 WHERE id = $1")
        .bind(root)
        .bind(Uuid::now_v7())
        .execute(o.shared.store.pool())
        .await?;
    let worker = env.rust_worker();
    let done = o.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));
    broker.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_that_failed_while_connected_goes_out_without_a_reconnect() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    // The step queue disappears under a live connection: the broker returns the root step's
    // message (unroutable) and the orchestrator keeps it, connected all along.
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    let channel = broker.channel().await?;
    let queue = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
    channel
        .queue_delete(queue.as_str().into(), Default::default())
        .await?;
    let task = create(&o, "linear", 6).await?;
    assert_eq!(o.shared.dispatcher.backlog(), 1, "the returned round waits");
    assert!(o.shared.broker_up(), "and the connection lives on");
    // Once the queue is back, a sweep sends it; no reconnect ever comes.
    broker.declare(&["rust_examples".to_owned()]).await?;
    let mut events = o.events().subscribe();
    sweeps(&mut events, 1).await?;
    assert_eq!(o.shared.dispatcher.backlog(), 0);
    let worker = env.rust_worker();
    let done = o.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));
    broker.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_committed_as_their_broker_session_ends_still_dispatch_what_they_made_ready()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    // No worker yet: the root step waits in its queue while its row is held, so that applying
    // its result will wait for the row.
    let task = create(&o, "linear", 6).await?;
    let root = step_id(&o, task, "double").await?;
    let pool = o.shared.store.pool();
    let mut hold = pool.begin().await?;
    sqlx::query("SELECT 1 FROM steps WHERE id = $1 FOR UPDATE")
        .bind(root)
        .execute(&mut *hold)
        .await?;
    let worker = env.rust_worker();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND query LIKE '%tasker_apply_results%'",
            )
            .fetch_one(pool)
            .await?;
            if waiting > 0 {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("applying the root step's result never waited for its row"))??;
    // The broker session ends while that transaction waits: its other consumer (the dead
    // letters) loses its queue.
    let mut up = o.shared.broker_watch();
    up.borrow_and_update();
    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "test").await?;
    let channel = broker.channel().await?;
    channel
        .queue_delete(
            topology::dead_letter_queue(&cfg.queue_prefix)
                .as_str()
                .into(),
            Default::default(),
        )
        .await?;
    tokio::time::timeout(Duration::from_secs(30), up.changed()).await??;
    // Now the transaction commits: the next step is `enqueued`, and must still be sent.
    hold.rollback().await?;
    let done = o.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));
    broker.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
