//! A rate key paused: no start before the pause's end, then starts paced no faster than the
//! limit; paused again and resumed, the next step starts at once.

use std::time::Duration;

use chrono::{SubsecRound, Utc};
use serde_json::json;

use super::{create, env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_rate_key_holds_every_start_and_then_paces_them() -> anyhow::Result<()> {
    let env = env().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    // The key exists once a step claimed it.
    let first = o
        .run_task("rust_examples", "rated", json!({"sleep_ms": 0}))
        .await?;
    assert_eq!(first.state, "complete");
    // Microseconds, as PostgreSQL keeps them.
    let pause_end = (Utc::now() + chrono::Duration::milliseconds(2500)).trunc_subsecs(6);
    let paused = o
        .client
        .pause_rate_limit("flow-provider", pause_end, Some("429 from the provider"))
        .await?;
    assert_eq!(paused.paused_until, Some(pause_end));
    assert_eq!((paused.limit, paused.per_ms, paused.burst), (100, 1000, 20));
    let mut ids = Vec::new();
    for _ in 0..60 {
        ids.push(create(&o, "rated", json!({"sleep_ms": 0})).await?.id);
    }
    let listed = o.client.rate_limits().await?;
    let key = listed.iter().find(|r| r.key == "flow-provider").unwrap();
    assert_eq!(key.pause_note.as_deref(), Some("429 from the provider"));
    let step = &o.client.steps(ids[0]).await?[0];
    assert_eq!(step.state, "throttled");
    assert_eq!(step.throttle.as_ref().unwrap()["kind"], "paused");
    let mut starts = Vec::new();
    for id in &ids {
        let task = o.wait(*id).await?;
        assert_eq!(task.state, "complete", "{task:?}");
        starts.push(o.client.steps(*id).await?[0].dispatched_at.unwrap());
    }
    starts.sort();
    // None before the pause's end; then 20 at once and one every 10 ms. The bucket's clock
    // starts at the first claim after the pause, itself no earlier than the pause's end (both
    // the database's clock), and a step's start is recorded after its claim: the k-th (from 0)
    // starts no earlier than (k - 19) × 10 ms after the pause's end, however slow the machine.
    assert!(starts[0] >= pause_end, "{} before {pause_end}", starts[0]);
    for (k, at) in starts.iter().enumerate().skip(20) {
        let least = chrono::Duration::milliseconds((k as i64 - 19) * 10);
        assert!(
            *at - pause_end >= least,
            "start {k} came {} after the pause's end",
            *at - pause_end
        );
    }
    // Pausing again, then resuming, lets the next start at once.
    o.client
        .pause_rate_limit(
            "flow-provider",
            Utc::now() + chrono::Duration::hours(1),
            None,
        )
        .await?;
    let held = create(&o, "rated", json!({"sleep_ms": 0})).await?;
    o.until(
        Duration::from_secs(10),
        "the step held by the pause",
        || async {
            let s = o.client.steps(held.id).await?;
            Ok((s[0].state == "throttled").then_some(()))
        },
    )
    .await?;
    let resumed = o.client.resume_rate_limit("flow-provider").await?;
    assert_eq!((resumed.paused_until, resumed.pause_note), (None, None));
    assert_eq!(o.wait(held.id).await?.state, "complete");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
