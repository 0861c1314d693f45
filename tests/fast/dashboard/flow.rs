//! Flow control (`tests/dashboard/flow.mjs`): a throttled step says which key holds it and until
//! when, a high-priority task says so, the Limits page pauses and resumes a rate key.

use super::*;

/// A template whose step holds a customer's slot while it waits a day for its rate token.
const METERED: &str = "namespace: rust_examples
name: dash_metered
version: '1.0.0'
concurrency: {key: /customer, limit: 2}
steps:
  - name: charge
    handler: double
    rate_limit: {key: dashboard-rate, limit: 1, per: 1d, burst: 1}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_steps_and_the_limits_page_in_a_real_browser() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    o.client.register_template(METERED, None, None).await?;
    let context = json!({"value": 6, "customer": "A"});
    // The first takes the day's only token; the second, high priority, waits for the next.
    let first = o
        .run_task("rust_examples", "dash_metered", context.clone())
        .await?;
    assert_eq!(first.state, "complete", "{first:?}");
    let second = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "dash_metered")
                .context(context)
                .priority(tasker_client::Priority::High),
        )
        .await?;
    o.until(
        Duration::from_secs(10),
        "the second charge throttled",
        || async {
            let s = steps_by_name(&o.client, second.id).await?;
            Ok((s["charge"].state == "throttled").then_some(()))
        },
    )
    .await?;
    let shots = screenshots();
    let report = clean_tour(
        "flow.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("THROTTLED_TASK_ID", second.id.to_string()),
            ("THROTTLED_STEP", "charge".to_owned()),
            ("THROTTLE_KEY", "dashboard-rate".to_owned()),
            ("THROTTLE_KIND", "rate".to_owned()),
            ("PRIORITY", "high".to_owned()),
            ("RATE_KEY", "dashboard-rate".to_owned()),
            ("CONCURRENCY_KEY", "rust_examples/dash_metered:A".to_owned()),
            ("PAUSE_NOTE", "429 from the provider".to_owned()),
        ],
    )
    .await?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    assert!(
        text(&report["throttled"]["text"]).contains("rate limit dashboard-rate"),
        "{report}"
    );
    assert!(
        text(&report["throttled"]["limits"]).contains("rust_examples/dash_metered:A"),
        "{report}"
    );
    assert_eq!(report["throttled"]["priority"], "high priority", "{report}");
    assert_eq!(report["listed"]["priority"], "high", "{report}");
    assert_eq!(report["concurrency"]["inUse"], "1 / 2", "{report}");
    assert_eq!(
        report["dialogs"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["dismissed"]["paused"], "false", "{report}");
    assert!(
        text(&report["paused"]["state"]).contains("429 from the provider"),
        "{report}"
    );
    // The page's pause and resume reached the server: the key is no longer paused.
    let rate = o.client.rate_limits().await?;
    let key = rate
        .iter()
        .find(|r| r.key == "dashboard-rate")
        .expect("listed");
    assert_eq!(key.paused_until, None, "{key:?}");
    assert_screenshots(
        &shots,
        &[
            "f1-throttled",
            "f2-limits",
            "f3-pause",
            "f4-paused",
            "f5-resumed",
        ],
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
