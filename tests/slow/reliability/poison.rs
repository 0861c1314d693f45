//! Poison: a result that cannot be applied (a NUL in its JSON, an attempt beyond PostgreSQL's
//! integer, not a result at all) fails only its own step and goes to the dead letters with its
//! reason while every other task advances; a step whose message is too large fails alone.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::{TestEnv, steps_by_name};
use tasker_broker::{Broker, Outgoing, topology};
use tasker_client::CreateTask;
use tasker_shared::{Outcome, StepResult};

use super::{create, step_id};

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
        streamed: None,
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
