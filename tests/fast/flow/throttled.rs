//! A throttled step: it says what holds it, a cancel of the holder frees the slot (and a
//! cancelled throttled step gives back nothing it did not hold); one left behind a free slot is
//! woken by the reconciler.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::steps_by_name;

use super::{create, env, no_slot_held};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_step_says_what_holds_it_and_a_cancel_frees_the_slot() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The first holds the account's only slot for a minute; the second waits for it.
    let holder = create(
        &o,
        "single_file",
        json!({"account": "acct-1", "sleep_ms": 60000}),
    )
    .await?;
    let waiter = create(
        &o,
        "single_file",
        json!({"account": "acct-1", "sleep_ms": 0}),
    )
    .await?;
    assert_eq!(holder.priority, "low", "the template's priority");
    let step = o
        .until(
            Duration::from_secs(10),
            "the second task's step throttled",
            || async {
                let s = steps_by_name(&o.client, waiter.id).await?;
                Ok(Some(s["book"].clone()).filter(|s| s.state == "throttled"))
            },
        )
        .await?;
    let t = step.throttle.as_ref().expect("what holds it");
    assert_eq!(t["kind"], "concurrency");
    assert_eq!(t["key"], "rust_examples/single_file/book:acct-1");
    assert_eq!(t["limit"], 1);
    assert!(t["until"].is_null() && t["since"].is_string(), "{t}");
    assert_eq!(step.attempt, 0, "not in flight: no attempt counted");
    let keys = o
        .client
        .concurrency_limits(Some("rust_examples/single_file/"))
        .await?;
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(
        (keys[0].in_use, keys[0].limit, keys[0].throttled),
        (1, 1, 1)
    );
    // Cancelling the holder gives its slot back; the waiter starts and finishes.
    o.client.cancel(holder.id).await?;
    let done = o.wait(waiter.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let history = o.client.history(waiter.id).await?;
    let tos: Vec<&str> = history
        .iter()
        .filter(|t| t.step.is_some())
        .map(|t| t.to.as_str())
        .collect();
    assert_eq!(tos, ["throttled", "enqueued", "completed"], "{history:?}");
    // A cancelled throttled step gives back nothing it did not hold.
    let a = create(
        &o,
        "single_file",
        json!({"account": "acct-2", "sleep_ms": 60000}),
    )
    .await?;
    let b = create(
        &o,
        "single_file",
        json!({"account": "acct-2", "sleep_ms": 0}),
    )
    .await?;
    o.until(
        Duration::from_secs(10),
        "acct-2's second step throttled",
        || async {
            let s = steps_by_name(&o.client, b.id).await?;
            Ok((s["book"].state == "throttled").then_some(()))
        },
    )
    .await?;
    o.client.cancel(b.id).await?;
    o.client.cancel(a.id).await?;
    no_slot_held(&o).await?;
    // The metrics say it too.
    let metrics = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    for family in [
        "tasker_throttle_wait_seconds",
        "tasker_steps_throttled",
        "tasker_throttled_woken_total",
    ] {
        assert!(metrics.contains(family), "{family} missing from /metrics");
    }
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// A step left throttled behind a free slot (the wake pass found it locked by another
/// transaction and went on) is woken by the reconciler's pass: nothing waits for a slot nobody
/// holds. The orchestrator is stopped while the reconciler runs, so only it can mark the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciler_wakes_a_step_left_behind_a_free_slot() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let db = sqlx::PgPool::connect(&env.config.database_url).await?;
    let key = "rust_examples/single_file/book:left";
    let holder = create(
        &o,
        "single_file",
        json!({"account": "left", "sleep_ms": 300}),
    )
    .await?;
    let waiter = create(&o, "single_file", json!({"account": "left", "sleep_ms": 0})).await?;
    let step = o
        .until(Duration::from_secs(10), "the waiter throttled", || async {
            let s = steps_by_name(&o.client, waiter.id).await?;
            Ok(Some(s["book"].clone()).filter(|s| s.state == "throttled"))
        })
        .await?;
    // Held by this transaction, the waiter is skipped when the holder's slot frees.
    let mut hold = db.begin().await?;
    sqlx::query("SELECT 1 FROM steps WHERE id = $1 FOR UPDATE")
        .bind(step.id)
        .execute(&mut *hold)
        .await?;
    assert_eq!(o.wait(holder.id).await?.state, "complete");
    let slot = |db: sqlx::PgPool| async move {
        let row: (i32, bool) =
            sqlx::query_as("SELECT in_use, wake FROM concurrency_slots WHERE key = $1")
                .bind(key)
                .fetch_one(&db)
                .await?;
        anyhow::Ok(row)
    };
    o.until(
        Duration::from_secs(10),
        "the wake pass over the freed key",
        || async { Ok((slot(db.clone()).await? == (0, false)).then_some(())) },
    )
    .await?;
    hold.rollback().await?;
    o.stop().await;
    let left = step_state(&db, step.id).await?;
    assert_eq!(left, "throttled", "left behind a free slot");
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    assert!(store.reconcile_slots().await?.is_empty(), "no drift");
    assert_eq!(slot(db.clone()).await?, (0, true), "the key marked to wake");
    let o = env.orchestrator().await?;
    assert_eq!(o.wait(waiter.id).await?.state, "complete");
    store.pool().close().await;
    db.close().await;
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

async fn step_state(db: &sqlx::PgPool, step: Uuid) -> anyhow::Result<String> {
    Ok(sqlx::query_scalar("SELECT state FROM steps WHERE id = $1")
        .bind(step)
        .fetch_one(db)
        .await?)
}
