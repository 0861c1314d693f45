//! Nothing stalls, nothing is lost: a result that cannot be applied fails only its own step and
//! goes to the dead letters while everything else advances; a step that never started survives
//! a worker outage longer than its timeout; a queue timeout fails a step nobody started; a
//! result batch committed as its broker session ends still sends the steps it made ready; an
//! orchestrator killed around a child task's start leaves exactly one child; an orchestrator
//! and a worker killed in the middle of work under a concurrency limit lose no task, never let
//! more than the limit run, and leave every slot free.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast;
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv, steps_by_name};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_orchestration::events::Event;
use tasker_shared::{Outcome, StepResult};

async fn create(o: &RunningOrchestrator, name: &str, value: i64) -> anyhow::Result<Uuid> {
    Ok(o.client
        .create_task(&CreateTask::new("rust_examples", name).context(json!({"value": value})))
        .await?
        .id)
}

async fn step_id(o: &RunningOrchestrator, task: Uuid, name: &str) -> anyhow::Result<Uuid> {
    Ok(steps_by_name(&o.client, task).await?[name].id)
}

/// Moves a step's dispatch an hour back, as if no worker had been up for that long.
async fn backdate(o: &RunningOrchestrator, step: Uuid) -> anyhow::Result<()> {
    sqlx::query("UPDATE steps SET dispatched_at = dispatched_at - interval '1 hour' WHERE id = $1")
        .bind(step)
        .execute(o.shared.store.pool())
        .await?;
    Ok(())
}

/// Waits until the sweeper has completed `n` whole rounds from now.
async fn sweeps(events: &mut broadcast::Receiver<Event>, n: usize) -> anyhow::Result<()> {
    // The round under way when we subscribed may have read the rows before the change.
    for _ in 0..=n {
        tokio::time::timeout(Duration::from_secs(20), async {
            while events.recv().await? != Event::Swept {}
            anyhow::Ok(())
        })
        .await??;
    }
    Ok(())
}

fn result(task: Uuid, step: Uuid, attempt: u32, value: serde_json::Value) -> StepResult {
    StepResult {
        task_id: task,
        step_id: step,
        attempt,
        outcome: Outcome::Success { result: value },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "poisoner".into(),
        traceparent: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_result_fails_only_its_own_step_and_is_dead_lettered() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    // No worker yet: every root step waits in its queue.
    let victim = create(&o, "linear", 6).await?;
    let healthy = [
        create(&o, "linear", 1).await?,
        create(&o, "diamond", 2).await?,
        create(&o, "linear", 3).await?,
    ];
    let victim_step = step_id(&o, victim, "double").await?;
    let bystander_step = step_id(&o, healthy[0], "double").await?;

    let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "poisoner").await?;
    let mut kept = o.dead_letters_kept();
    let poisons: Vec<Vec<u8>> = vec![
        // jsonb refuses a NUL character.
        serde_json::to_vec(&result(victim, victim_step, 1, json!({"text": "a\u{0}b"})))?,
        // An attempt beyond PostgreSQL's integer, aimed at a healthy task's step.
        serde_json::to_vec(&result(
            healthy[0],
            bystander_step,
            3_000_000_000,
            json!({}),
        ))?,
        // Not a result at all.
        vec![0xde, 0xad, 0xbe, 0xef, 0x00, 0xff],
    ];
    let publisher = broker.publisher().await?;
    let queue = topology::results_queue(&cfg.queue_prefix);
    publisher
        .publish_all(
            &poisons
                .iter()
                .map(|p| Outgoing {
                    queue: queue.clone(),
                    payload: p.clone(),
                })
                .collect::<Vec<_>>(),
        )
        .await?;

    // Each poison is kept as a dead letter with its reason, once its step's failure (if it
    // has one) is recorded.
    kept.take(poisons.len(), Duration::from_secs(30)).await?;
    let mut buried: Vec<(Vec<u8>, String, Option<String>)> =
        sqlx::query_as("SELECT body, reason, queue FROM dead_letters ORDER BY body")
            .fetch_all(o.shared.store.pool())
            .await?;
    let mut expected = poisons.clone();
    expected.sort();
    assert_eq!(
        buried.iter().map(|b| b.0.clone()).collect::<Vec<_>>(),
        expected
    );
    for (body, reason, from) in buried.drain(..) {
        assert_eq!(from.as_deref(), Some(queue.as_str()));
        let why = if body == poisons[2] {
            "malformed result message: "
        } else {
            "could not be applied: "
        };
        assert!(reason.contains(why), "{reason}");
    }

    let v = o.wait(victim).await?;
    assert_eq!(v.state, "error", "{v:?}");
    let steps = steps_by_name(&o.client, victim).await?;
    let error = steps["double"].error.clone().unwrap_or_default();
    assert_eq!(error["kind"], "unstorable_result", "{error}");
    assert!(
        !error.to_string().contains("INSERT") && !error.to_string().contains("jsonb"),
        "no SQL or internals in the recorded error: {error}"
    );

    // Everyone else goes on as if nothing happened.
    let worker = env.rust_worker();
    for id in healthy {
        let t = o.wait(id).await?;
        assert_eq!(t.state, "complete", "{t:?}");
    }
    let linear = o.client.task(healthy[0], None).await?;
    assert_eq!(linear.result, Some(json!({"halve": {"value": 72}})));
    worker.stop().await;
    broker.close().await;
    o.stop().await;
    env.cleanup().await
}

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
async fn a_step_whose_message_is_too_large_fails_alone() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.max_message_bytes = 4 * 1024;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let big = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "linear")
                .context(json!({"value": 1, "pad": "x".repeat(8 * 1024)})),
        )
        .await?;
    let small = create(&o, "linear", 2).await?;
    let failed = o.wait(big.id).await?;
    assert_eq!(failed.state, "error", "{failed:?}");
    let steps = steps_by_name(&o.client, big.id).await?;
    let error = steps["double"].error.clone().unwrap_or_default();
    assert_eq!(error["kind"], "message_too_large", "{error}");
    let done = o.wait(small).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    worker.stop().await;
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

/// An orchestrator SIGKILLed around the start of a child task leaves exactly one child per
/// step attempt. Before the commit: the child's idempotency key is held by an uncommitted row of
/// this test, so the orchestrator's child insert waits on it; the orchestrator is killed there
/// and its backend ended as PostgreSQL ends a dead client's, so nothing of the child commits;
/// a new orchestrator's sweeper publishes the step again and the child starts once. After the
/// commit: the orchestrator is killed as soon as the child exists; the step, linked to its child,
/// is not started again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_killed_around_a_child_start_leaves_one_child() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let children = |parent: Uuid| {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM tasks WHERE parent_task_id = $1",
                )
                .bind(parent)
                .fetch_one(&db)
                .await?,
            )
        }
    };
    let family =
        || CreateTask::new("rust_examples", "family").context(json!({"value": 1, "sleep_ms": 0}));
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;

    // Before the commit. No worker yet, so `prep` waits and `kid` is not dispatched.
    let parent = a.client.create_task(&family()).await?;
    let kid = steps_by_name(&a.client, parent.id).await?["kid"].id;
    // The child's key, held in its namespace (the parent's: keys are per namespace).
    let mut hold = db.begin().await?;
    sqlx::query(
        "INSERT INTO tasks (id, template_id, namespace, name, version, state, context,
                            idempotency_key, open_steps)
         SELECT $1, template_id, namespace, 'held', '1', 'running', '{}', $3, 0
         FROM tasks WHERE id = $2",
    )
    .bind(Uuid::now_v7())
    .bind(parent.id)
    .bind(format!("child:{kid}:1"))
    .execute(&mut *hold)
    .await?;
    let url = format!("http://127.0.0.1:{}", a.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker", &url).await?;
    // The orchestrator's child insert waits on the held key.
    let waiting = async {
        let mut every = tokio::time::interval(Duration::from_millis(20));
        loop {
            every.tick().await;
            let pid: Option<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND query LIKE '%tasker_create_tasks%'",
            )
            .fetch_optional(&db)
            .await?;
            if let Some(pid) = pid {
                return anyhow::Ok(pid);
            }
        }
    };
    let backend = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .map_err(|_| anyhow::anyhow!("the child's start never reached the held key"))??;
    a.child.kill().await?;
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(backend)
        .execute(&db)
        .await?;
    hold.rollback().await?;
    assert_eq!(
        children(parent.id).await?,
        0,
        "nothing of the child committed"
    );
    let b = common::start_orchestrator(&env, common::free_port()?).await?;
    let done = b.client.wait(parent.id, Duration::from_secs(60)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(children(parent.id).await?, 1, "one child for the attempt");

    // After the commit.
    let mut b = b;
    let second = b.client.create_task(&family()).await?;
    let exists = async {
        let mut every = tokio::time::interval(Duration::from_millis(5));
        loop {
            every.tick().await;
            if children(second.id).await? > 0 {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), exists)
        .await
        .map_err(|_| anyhow::anyhow!("no child started"))??;
    b.child.kill().await?;
    let c = common::start_orchestrator(&env, common::free_port()?).await?;
    let done = c.client.wait(second.id, Duration::from_secs(60)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(children(second.id).await?, 1, "one child for the attempt");
    worker.child.kill().await?;
    let mut c = c;
    c.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

/// Twenty tasks each for customers A and B under a limit of two per customer; an orchestrator
/// and the worker are SIGKILLed once a few have finished (another orchestrator runs on, a new
/// worker starts): all 40 finish, no more than two steps of a customer ever ran at once, every
/// slot is free afterwards and the reconciler finds nothing to correct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_holds_and_frees_every_slot_through_kills() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;
    let b = common::start_orchestrator(&env, common::free_port()?).await?;
    let url = format!("http://127.0.0.1:{}", b.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker-1", &url).await?;
    let mut tasks = Vec::new();
    for (i, customer) in ["A", "B"].iter().cycle().take(40).enumerate() {
        // Half the tasks through each orchestrator.
        let client = if i % 2 == 0 { &a.client } else { &b.client };
        let task = client
            .create_task(
                &CreateTask::new("rust_examples", "metered")
                    .context(json!({"customer": customer, "sleep_ms": 100})),
            )
            .await?;
        tasks.push((*customer, task.id));
    }
    // Midway: a few of each customer's tasks finished.
    for (_, id) in tasks.iter().take(6) {
        let done = b.client.wait(*id, Duration::from_secs(60)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
    }
    a.child.kill().await?;
    worker.child.kill().await?;
    let mut worker = common::start_worker(&env, "rust", "rust-worker-2", &url).await?;
    let mut steps: std::collections::BTreeMap<&str, Vec<tasker_client::Step>> = Default::default();
    for (customer, id) in &tasks {
        let done = b.client.wait(*id, Duration::from_secs(120)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
        for s in b.client.steps(*id).await? {
            let running = s.result.as_ref().and_then(|r| r["running"].as_u64());
            assert!(running.is_some_and(|n| n <= 2), "{customer}: {s:?}");
            steps.entry(customer).or_default().push(s);
        }
    }
    for (customer, s) in &steps {
        let mut edges: Vec<(chrono::DateTime<chrono::Utc>, i32)> = s
            .iter()
            .flat_map(|s| [(s.started_at.unwrap(), 1), (s.finished_at.unwrap(), -1)])
            .collect();
        edges.sort();
        let most = edges
            .iter()
            .scan(0, |n, (_, d)| {
                *n += d;
                Some(*n)
            })
            .max();
        assert!(most.is_some_and(|m| m <= 2), "{customer}: {most:?} at once");
    }
    for l in b.client.concurrency_limits(None).await? {
        assert_eq!((l.in_use, l.throttled), (0, 0), "{l:?}");
    }
    let drift: serde_json::Value = sqlx::query_scalar("SELECT tasker_reconcile_slots()")
        .fetch_one(&db)
        .await?;
    assert_eq!(drift, json!([]), "the reconciler corrected slots");
    worker.child.kill().await?;
    let mut b = b;
    b.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

/// The purge: 100,000 finished tasks 40 days old beside running work (a running task
/// with an old finished child, an old finished parent with a running child). A retention pass
/// is SIGKILLed midway: every task is whole or gone, none half-deleted. Another orchestrator's
/// pass then takes exactly the old finished ones, beside new tasks that keep running to
/// completion, with no deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_of_100000_old_tasks_killed_midway_leaves_every_task_whole_or_gone()
-> anyhow::Result<()> {
    const OLD: i64 = 100_000;
    let env = TestEnv::new().await?;
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let keep = [("TASKER_RETENTION__COMPLETE", "never")];
    let mut a = common::start_orchestrator_with(&env, common::free_port()?, &keep).await?;
    let url = format!("http://127.0.0.1:{}", a.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker", &url).await?;
    let first = create_with(&a.client, "linear", 6).await?;
    let first = a.client.wait(first, Duration::from_secs(60)).await?;
    assert_eq!(first.state, "complete");
    let per_task: i64 = sqlx::query_scalar("SELECT count(*) FROM transitions WHERE task_id = $1")
        .bind(first.id)
        .fetch_one(&db)
        .await?;
    let copying = std::time::Instant::now();
    let old = tasker::copy_finished_task(
        &env.config.database_url,
        first.id,
        OLD,
        chrono::Duration::days(40),
    )
    .await?;
    eprintln!("copied {OLD} finished tasks in {:?}", copying.elapsed());
    // Unfinished work tied to old finished tasks (tasks that start in an hour, so they stay
    // unfinished while a worker runs the live work below): both stay.
    worker.child.kill().await?;
    let later = |value: i64| {
        let mut t = CreateTask::new("rust_examples", "linear").context(json!({"value": value}));
        t.delay = Some("1h".into());
        t
    };
    let running = a.client.create_task(&later(1)).await?.id;
    let running_child = a.client.create_task(&later(2)).await?.id;
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(old[0])
        .bind(running)
        .execute(&db)
        .await?;
    sqlx::query("UPDATE tasks SET has_children = true WHERE id = $1")
        .bind(old[1])
        .execute(&db)
        .await?;
    sqlx::query("UPDATE tasks SET parent_task_id = $2 WHERE id = $1")
        .bind(running_child)
        .bind(old[1])
        .execute(&db)
        .await?;
    a.child.kill().await?;

    // Every task whole (its 4 steps, 3 edges, its history) or gone (nothing left, a tombstone).
    let whole_or_gone = || {
        let db = db.clone();
        async move {
            let half: i64 = sqlx::query_scalar(
                "WITH s AS (SELECT task_id, count(*) AS n FROM steps GROUP BY task_id),
                      e AS (SELECT task_id, count(*) AS n FROM step_edges GROUP BY task_id),
                      h AS (SELECT task_id, count(*) AS n FROM transitions GROUP BY task_id)
                 SELECT count(*) FROM tasks t
                 LEFT JOIN s ON s.task_id = t.id
                 LEFT JOIN e ON e.task_id = t.id
                 LEFT JOIN h ON h.task_id = t.id
                 WHERE t.completed_at < now() - interval '30 days'
                   AND (COALESCE(s.n, 0) <> 4 OR COALESCE(e.n, 0) <> 3 OR COALESCE(h.n, 0) <> $1)",
            )
            .bind(per_task)
            .fetch_one(&db)
            .await?;
            let remains: i64 = sqlx::query_scalar(
                "SELECT (SELECT count(*) FROM steps WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM step_edges WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM transitions WHERE task_id IN (SELECT id FROM purged_tasks))
                      + (SELECT count(*) FROM tasks WHERE id IN (SELECT id FROM purged_tasks))",
            )
            .fetch_one(&db)
            .await?;
            anyhow::ensure!(half == 0, "{half} tasks half-deleted");
            anyhow::ensure!(remains == 0, "{remains} rows of purged tasks remain");
            anyhow::Ok(())
        }
    };
    let purged = || {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>("SELECT count(*) FROM purged_tasks")
                    .fetch_one(&db)
                    .await?,
            )
        }
    };
    let retention = [
        ("TASKER_RETENTION__COMPLETE", "30d"),
        ("TASKER_RETENTION__INTERVAL_MS", "1000"),
        ("TASKER_RETENTION__PAUSE_MS", "0"),
        ("TASKER_RETENTION__BUSY_PERCENT", "100"),
        ("TASKER_RETENTION__BATCH", "2000"),
    ];
    // Killed midway through its pass.
    let mut b = common::start_orchestrator_with(&env, common::free_port()?, &retention).await?;
    let midway = async {
        let mut every = tokio::time::interval(Duration::from_millis(50));
        loop {
            every.tick().await;
            if purged().await? >= 5_000 {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), midway)
        .await
        .map_err(|_| anyhow::anyhow!("the retention pass never got going"))??;
    b.child.kill().await?;
    let at_kill = purged().await?;
    assert!(
        at_kill < OLD - 2,
        "the pass ended before the kill ({at_kill})"
    );
    let checking = std::time::Instant::now();
    whole_or_gone().await?;
    eprintln!(
        "checked every task whole or gone in {:?}",
        checking.elapsed()
    );

    // Another pass finishes it beside live work.
    let deadlocks = || {
        let db = db.clone();
        async move {
            anyhow::Ok(
                sqlx::query_scalar::<_, i64>(
                    "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
                )
                .fetch_one(&db)
                .await?,
            )
        }
    };
    let deadlocks_before = deadlocks().await?;
    let c = common::start_orchestrator_with(&env, common::free_port()?, &retention).await?;
    let url = format!("http://127.0.0.1:{}", c.port);
    let mut worker = common::start_worker(&env, "rust", "rust-worker-2", &url).await?;
    let mut live = Vec::new();
    let all_gone = async {
        let mut every = tokio::time::interval(Duration::from_millis(100));
        loop {
            every.tick().await;
            live.push(create_with(&c.client, "linear", live.len() as i64).await?);
            if purged().await? == OLD - 2 {
                return anyhow::Ok(());
            }
        }
    };
    let purging = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(600), all_gone)
        .await
        .map_err(|_| anyhow::anyhow!("the purge did not finish"))??;
    eprintln!(
        "purged the rest ({} tasks) in {:?} beside {} new tasks",
        OLD - 2 - at_kill,
        purging.elapsed(),
        live.len()
    );
    whole_or_gone().await?;
    for id in &live {
        let done = c.client.wait(*id, Duration::from_secs(60)).await?;
        assert_eq!(done.state, "complete", "{done:?}");
    }
    assert!(
        live.len() > 5,
        "too little work beside the purge: {}",
        live.len()
    );
    let mut left: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM tasks WHERE NOT (id = ANY($1)) ORDER BY id")
            .bind(&live)
            .fetch_all(&db)
            .await?;
    let mut kept = vec![first.id, running, running_child, old[0], old[1]];
    left.sort();
    kept.sort();
    assert_eq!(left, kept, "exactly the old finished tasks went");
    assert_eq!(
        deadlocks().await?,
        deadlocks_before,
        "deadlocks beside the purge"
    );
    worker.child.kill().await?;
    let mut c = c;
    c.child.kill().await?;
    db.close().await;
    env.cleanup().await
}

async fn create_with(
    client: &tasker_client::Client,
    name: &str,
    value: i64,
) -> anyhow::Result<Uuid> {
    Ok(client
        .create_task(&CreateTask::new("rust_examples", name).context(json!({"value": value})))
        .await?
        .id)
}

/// A rolling restart fails nobody's task: two orchestrators and a worker under a steady load
/// of 4-step tasks (about 300 steps a second) while the orchestrators start 40 times, one after
/// the other; before every fifth start a newer build applies its engine SQL with a changed
/// `tasker_apply_run` (in place, while the other orchestrator runs and calls it). Every start
/// succeeds; every task completes; none is lost; no transition is applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_orchestrator_starts_under_load_fail_no_task() -> anyhow::Result<()> {
    use tasker_orchestration::store::{apply_engine, engine};
    let env = TestEnv::new().await?;
    let mut config = env.config.clone();
    config.worker.concurrency = 32;
    let mut live = vec![
        RunningOrchestrator::start(config.clone()).await?,
        RunningOrchestrator::start(config.clone()).await?,
    ];
    let worker = env.rust_worker();
    let urls: Vec<String> = live.iter().map(RunningOrchestrator::url).collect();
    let created = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Uuid>::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    // The load: 15 tasks every 200 ms through whichever orchestrator answers (one may be
    // restarting; a refused connection is tried on the other, a batch is created at most once
    // thanks to its idempotency keys).
    let load = {
        let (created, stop) = (created.clone(), stop.clone());
        let pool = sqlx::PgPool::connect(&config.database_url).await?;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            for round in 0u64.. {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let batch: Vec<CreateTask> = (0..15)
                    .map(|i| CreateTask {
                        idempotency_key: Some(format!("rolling-{round}-{i}")),
                        ..CreateTask::new("rust_examples", "linear").context(json!({"value": i}))
                    })
                    .collect();
                for attempt in 0..20usize {
                    let client = tasker_client::Client::new(&urls[attempt % 2]);
                    if client.create_tasks(&batch).await.is_ok() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let keys: Vec<String> = (0..15).map(|i| format!("rolling-{round}-{i}")).collect();
                let ids: Vec<Uuid> =
                    sqlx::query_scalar("SELECT id FROM tasks WHERE idempotency_key = ANY($1)")
                        .bind(&keys)
                        .fetch_all(&pool)
                        .await
                        .unwrap_or_default();
                created
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(ids);
            }
            pool.close().await;
        })
    };
    let store = tasker_orchestration::store::Store::connect(&config.database_url, 2).await?;
    for start in 0..40 {
        if start % 5 == 4 {
            // A newer build's start: its tasker_apply_run differs, applied in place.
            let mut newer = engine();
            if let Some(run) = newer.iter_mut().find(|(n, _)| *n == "tasker_apply_run") {
                run.1 = run
                    .1
                    .replacen("BEGIN", &format!("BEGIN\n    -- build {start}"), 1);
            }
            apply_engine(store.pool(), &newer, &format!("999.0.{start}")).await?;
        }
        let i = start % 2;
        let old = live.remove(i);
        let addr = old.addr.to_string();
        old.stop().await;
        let restarted = RunningOrchestrator::start_on(config.clone(), &addr)
            .await
            .map_err(|e| anyhow::anyhow!("start {start} failed: {e}"))?;
        live.insert(i, restarted);
    }
    stop.cancel();
    load.await?;
    let ids = created.lock().unwrap_or_else(|p| p.into_inner()).clone();
    anyhow::ensure!(ids.len() > 600, "only {} tasks created", ids.len());
    for id in &ids {
        let task = live[0].wait(*id).await?;
        anyhow::ensure!(task.state == "complete", "task {id} ended {task:?}");
    }
    let pool = store.pool();
    let errors: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE state <> 'complete'")
        .fetch_one(pool)
        .await?;
    anyhow::ensure!(errors == 0, "{errors} tasks did not complete");
    let twice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM transitions WHERE step_id IS NOT NULL
                               GROUP BY step_id, attempt, to_state HAVING count(*) > 1) x",
    )
    .fetch_one(pool)
    .await?;
    anyhow::ensure!(twice == 0, "{twice} transitions applied twice");
    println!(
        "rolling restarts: 40 starts, {} tasks, none failed",
        ids.len()
    );
    worker.stop().await;
    for o in live {
        o.stop().await;
    }
    store.pool().close().await;
    env.cleanup().await
}
