//! Wait steps that wait for an event by correlation (`wait: {event, match}`; docs/events.md):
//! an event sent while the task runs but before its wait begins completes that wait once; two
//! tasks waiting on the same value each take their own event; another value, another namespace
//! or a wait whose time runs out take nothing — against a real orchestrator and PostgreSQL.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Connection;
use tasker_client::{CreateTask, SendEvent};
use uuid::Uuid;

use super::bare_env;

/// Pauses two seconds, then waits for the payment of its order. No worker is needed: both steps
/// are the orchestrator's.
const ORDER: &str = "namespace: ew
name: order
version: '1'
context_schema: {type: object, required: [order_id]}
steps:
  - name: pause
    wait: {sleep: 2s}
  - name: settle
    depends_on: [pause]
    wait:
      event: payment.settled
      match: {/data/order_id: /context/order_id}
      timeout: 1h
";

/// Waits at once, for at most a second, and goes on without the event.
const BRIEF: &str = "namespace: ew
name: brief
version: '1'
steps:
  - name: settle
    wait: {event: payment.settled, match: {/key: /context/order_id}, timeout: 1s, on_timeout: continue}
";

fn paid(namespace: &str, order: i64) -> SendEvent {
    SendEvent {
        namespace: namespace.into(),
        name: "payment.settled".into(),
        data: Some(json!({ "order_id": order, "amount": 10 * order })),
        key: None,
        id: None,
    }
}

async fn order(o: &tasker::RunningOrchestrator, id: i64) -> anyhow::Result<Uuid> {
    let task = CreateTask::new("ew", "order").context(json!({ "order_id": id }));
    Ok(o.client.create_task(&task).await?.id)
}

async fn state(o: &tasker::RunningOrchestrator, id: Uuid) -> anyhow::Result<String> {
    Ok(o.client.task(id, None).await?.state.to_string())
}

/// The step `settle`'s state and result.
async fn settle(o: &tasker::RunningOrchestrator, id: Uuid) -> anyhow::Result<(String, Value)> {
    let steps = o.client.steps(id).await?;
    let s = steps
        .iter()
        .find(|s| s.name == "settle")
        .expect("a settle step");
    Ok((s.state.to_string(), s.result.clone().unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_sent_before_its_wait_begins_completes_it_once() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(ORDER, Some("order.yaml"), None)
        .await?;
    let task = order(&o, 1).await?;
    // Sent while the task pauses: its wait has not begun.
    let (event, _) = o.client.send_event(&paid("ew", 1)).await?;
    assert_eq!(settle(&o, task).await?.0, "pending");
    o.until(
        Duration::from_secs(30),
        "the wait takes the event",
        || async { Ok((state(&o, task).await? == "complete").then_some(())) },
    )
    .await?;
    let (step_state, result) = settle(&o, task).await?;
    assert_eq!(step_state, "completed");
    assert_eq!(result["id"], event.id.to_string(), "{result}");
    assert_eq!(
        result["data"],
        json!({ "order_id": 1, "amount": 10 }),
        "{result}"
    );
    // The event says which step took it.
    let taker = o.client.event(event.id).await?.taken_by.expect("taken");
    assert_eq!((taker.task_id, taker.step.as_str()), (task, "settle"));
    // Taken once: a second task of the same order does not get it again.
    let again = order(&o, 1).await?;
    o.until(
        Duration::from_secs(30),
        "the second task's wait begins",
        || async { Ok((settle(&o, again).await?.0 == "waiting").then_some(())) },
    )
    .await?;
    let mut db = sqlx::PgConnection::connect(&env.config.database_url).await?;
    let taken: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE consumed_by IS NOT NULL")
            .fetch_one(&mut db)
            .await?;
    assert_eq!(taken, 1);
    db.close().await?;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_waiting_on_one_value_each_take_their_own_event() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(ORDER, Some("order.yaml"), None)
        .await?;
    let (first, second, other) = (
        order(&o, 7).await?,
        order(&o, 7).await?,
        order(&o, 8).await?,
    );
    for task in [first, second, other] {
        o.until(Duration::from_secs(30), "the wait begins", || async {
            Ok((settle(&o, task).await?.0 == "waiting").then_some(()))
        })
        .await?;
    }
    // Another namespace's event of the same name and value, and another order's: taken by none.
    o.client.send_event(&paid("ew_other", 7)).await?;
    let (one, _) = o.client.send_event(&paid("ew", 7)).await?;
    o.until(Duration::from_secs(30), "one task takes it", || async {
        let done = [state(&o, first).await?, state(&o, second).await?];
        Ok((done.iter().filter(|s| *s == "complete").count() == 1).then_some(done))
    })
    .await?;
    let (two, _) = o.client.send_event(&paid("ew", 7)).await?;
    o.until(
        Duration::from_secs(30),
        "the other takes the second",
        || async {
            Ok(
                (state(&o, first).await? == "complete" && state(&o, second).await? == "complete")
                    .then_some(()),
            )
        },
    )
    .await?;
    let (a, b) = (settle(&o, first).await?.1, settle(&o, second).await?.1);
    let mut got = [a["id"].clone(), b["id"].clone()];
    got.sort_by_key(|v| v.to_string());
    let mut sent = [json!(one.id.to_string()), json!(two.id.to_string())];
    sent.sort_by_key(|v| v.to_string());
    assert_eq!(got, sent, "each its own event");
    assert_eq!(
        settle(&o, other).await?.0,
        "waiting",
        "order 8 took nothing"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_whose_event_never_comes_ends_at_its_timeout() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(BRIEF, Some("brief.yaml"), None)
        .await?;
    let task = CreateTask::new("ew", "brief").context(json!({ "order_id": "a-1" }));
    let id = o.client.create_task(&task).await?.id;
    o.client
        .send_event(&SendEvent {
            key: Some("b-2".into()),
            ..paid("ew", 2)
        })
        .await?;
    o.until(Duration::from_secs(30), "the wait times out", || async {
        Ok((state(&o, id).await? == "complete").then_some(()))
    })
    .await?;
    assert_eq!(settle(&o, id).await?.1, json!({ "timed_out": true }));
    o.stop().await;
    env.cleanup().await
}
