//! Forged results: a result moves only the step it names, at the attempt it names, and only for a
//! sender that may serve that step's namespace; every forgery is dead-lettered with its reason,
//! and a forged copy in the same batch never displaces the real result.

use std::time::Duration;

use serde_json::{Value, json};
use tasker::tokens::token;
use tasker::{RunningOrchestrator, RunningWorker, TestEnv};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_orchestration::store::Scope;
use tasker_shared::{Outcome, StepResult};
use tasker_worker::{RustHost, Worker, WorkerOptions};
use uuid::Uuid;

use super::register_pairs;

/// The first step of a task, as the API shows it.
async fn first_step(
    o: &RunningOrchestrator,
    task: Uuid,
) -> anyhow::Result<tasker_shared::api::Step> {
    Ok(o.client
        .steps(task)
        .await?
        .into_iter()
        .find(|s| s.name == "first")
        .expect("a first step"))
}

fn forged(task: Uuid, step: Uuid, attempt: u32) -> Vec<u8> {
    let r = StepResult {
        task_id: task,
        step_id: step,
        attempt,
        outcome: Outcome::Success {
            result: json!({"value": 1_000_000}),
        },
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        worker: "someone-else".into(),
        traceparent: None,
        streamed: None,
    };
    serde_json::to_vec(&[r]).expect("a result encodes")
}

/// Publishes `payload` as `broker`'s user through the results exchange, as a worker does.
async fn publish_result(broker: &Broker, prefix: &str, payload: Vec<u8>) -> anyhow::Result<()> {
    let publisher = broker
        .publisher()
        .await?
        .via(&topology::results_exchange(prefix));
    publisher
        .publish_all(&[Outgoing {
            queue: topology::results_queue(prefix),
            payload,
        }])
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_results_change_nothing_and_are_dead_lettered_with_their_reason()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register_pairs(&o).await?;
    let prefix = env.config.queue_prefix.clone();
    // Each team: a broker user that may read only its namespace's steps, and the token of the
    // same name that says which namespaces its results may move.
    let (user_a, url_a) = env.worker_user("a", &["trust_a"])?;
    let (user_b, url_b) = env.worker_user("b", &["trust_b"])?;
    token(&o, &user_a, Scope::Write, Some("trust_a")).await?;
    token(&o, &user_b, Scope::Write, Some("trust_b")).await?;

    // No worker yet: each task's first step waits in flight, enqueued at attempt 1.
    let create = |ns: &str| CreateTask::new(ns, "pair").context(json!({"value": 3}));
    let task_a = o.client.create_task(&create("trust_a")).await?.id;
    let task_b = o.client.create_task(&create("trust_b")).await?.id;
    let step_b = first_step(&o, task_b).await?;
    assert_eq!((step_b.state.as_str(), step_b.attempt), ("enqueued", 1));

    let team_a = Broker::connect(&url_a, &prefix, "trust-a").await?;
    let team_b = Broker::connect(&url_b, &prefix, "trust-b").await?;
    let mut kept = o.dead_letters_kept();
    // A matching step with another task's id; another namespace's step named under the
    // sender's own task; the right step with a stale attempt; the right step and attempt from
    // a sender who may not serve its namespace.
    let forgeries = [
        (
            &team_b,
            forged(task_a, step_b.id, 1),
            "result_mismatch: step",
        ),
        (
            &team_a,
            forged(task_a, step_b.id, 1),
            "result_mismatch: step",
        ),
        (
            &team_b,
            forged(task_b, step_b.id, 0),
            "result_mismatch: attempt 0",
        ),
        (
            &team_a,
            forged(task_b, step_b.id, 1),
            "result_not_permitted",
        ),
    ];
    for (broker, payload, _) in &forgeries {
        publish_result(broker, &prefix, payload.clone()).await?;
    }
    let ids = kept.take(forgeries.len(), Duration::from_secs(20)).await?;
    let mut reasons = Vec::new();
    for id in ids {
        let letter = o.client.dead_letter(id).await?;
        assert!(letter.info.task_id.is_some(), "{letter:?}");
        reasons.push((
            letter.info.reason.clone(),
            letter.headers["x-tasker-sender"]
                .as_str()
                .map(str::to_owned),
        ));
    }
    for (broker, payload, reason) in &forgeries {
        let sender = broker.user().to_owned();
        let body: Value = serde_json::from_slice(payload)?;
        let found = reasons
            .iter()
            .any(|(r, s)| r.starts_with(reason) && s.as_deref() == Some(&sender));
        assert!(
            found,
            "no dead letter {reason:?} from {sender} for {body}: {reasons:?}"
        );
    }
    // Nothing moved.
    let after = first_step(&o, task_b).await?;
    assert_eq!(
        (after.state.as_str(), after.attempt, &after.result),
        ("enqueued", 1, &None)
    );
    assert_eq!(first_step(&o, task_a).await?.state, "enqueued");
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    for reason in ["result_mismatch", "result_not_permitted"] {
        assert!(
            metrics.contains(&format!(
                "tasker_results_rejected_total{{reason=\"{reason}\"}}"
            )),
            "{reason} not counted"
        );
    }

    // Each team's own worker, on its own broker user, completes its own task untouched.
    let mut workers = Vec::new();
    for (url, ns) in [(&url_a, "trust_a"), (&url_b, "trust_b")] {
        let mut config = env.config.clone();
        config.amqp_url = url.clone();
        let host = std::sync::Arc::new(RustHost::new(tasker_worker_rust::registry(), 8));
        let worker = Worker::new(
            WorkerOptions::from_config(&config, vec![ns.to_owned()]),
            host,
        );
        worker.check_access().await?;
        workers.push(RunningWorker::start(worker));
    }
    for task in [task_a, task_b] {
        let done = o.wait(task).await?;
        assert_eq!(done.state, "complete");
        assert_eq!(done.result, Some(json!({"second": {"value": 16}})));
    }
    for w in workers {
        w.stop().await;
    }
    team_a.close().await;
    team_b.close().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_copy_in_the_same_batch_never_displaces_the_real_result() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register_pairs(&o).await?;
    let other = o
        .client
        .create_task(&CreateTask::new("trust_a", "pair").context(json!({"value": 1})))
        .await?
        .id;
    let task = o
        .client
        .create_task(&CreateTask::new("trust_b", "pair").context(json!({"value": 1})))
        .await?
        .id;
    let step = first_step(&o, task).await?.id;
    let result = |task| -> anyhow::Result<Value> {
        Ok(serde_json::from_slice::<Vec<Value>>(&forged(task, step, 1))?.remove(0))
    };
    // Forged first (another task's id; a sender of another namespace), the real one last: the
    // engine sees them as three copies of one step's attempt.
    let batch = json!([result(other)?, result(task)?, result(task)?]);
    let permits = [None, Some("^(?:trust_a)$"), None];
    let answer: Value = sqlx::query_scalar("SELECT tasker_apply_results($1, $2)")
        .bind(&batch)
        .bind(&permits[..])
        .fetch_one(o.shared.store.pool())
        .await?;
    assert_eq!(answer["accepted"], 1, "{answer}");
    let codes = tasker::rejected_codes(&answer);
    assert_eq!(
        codes,
        vec![(1, "result_mismatch"), (2, "result_not_permitted")]
    );
    let after = first_step(&o, task).await?;
    assert_eq!(after.state, "completed");
    o.stop().await;
    env.cleanup().await
}
