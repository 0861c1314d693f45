//! Alert sinks that hang: notices are sent side by side, so a sink that accepts a connection
//! and never answers holds up its own rule's notices only — another rule's notice, due while
//! they hang, reaches its sink before any of them has even timed out.

use std::time::Duration;

use tasker::black_hole::{BlackHole, waiting_rule};
use tasker_client::CreateTask;

use super::alerts::sink;
use super::bare_env;

/// A step nobody serves: its task waits, and a `steps_waiting` rule fires.
const WAITING: &str = "namespace: shop_hang
name: order
version: '1'
steps:
  - name: pack
    handler: nobody_serves_this
";

/// How many rules have a hanging sink.
const HUNG: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_sink_delays_no_other_rules_notice() -> anyhow::Result<()> {
    let mut env = bare_env().await?;
    // A minute per try: the hanging sinks' first tries outlast the test.
    env.config.alerts.timeout_ms = 60_000;
    let o = env.orchestrator().await?;
    o.client.register_template(WAITING, None, None).await?;
    let mut hole = BlackHole::start().await?;
    for i in 0..HUNG {
        o.client
            .put_alert(&format!("hung-{i}"), &waiting_rule("shop_hang", &hole.url))
            .await?;
    }
    o.client
        .create_task(&CreateTask::new("shop_hang", "order"))
        .await?;
    // Every hanging rule fired and its notice is being sent: a connection each, unanswered.
    hole.until(HUNG, Duration::from_secs(15)).await?;

    // A rule saved now fires at its first check; its notice goes out beside the hanging ones.
    let mut healthy = sink().await?;
    o.client
        .put_alert("healthy", &waiting_rule("shop_hang", &healthy.url))
        .await?;
    let (_, body) = healthy.next(15).await?;
    let notice: serde_json::Value = serde_json::from_slice(&body)?;
    assert_eq!(
        (&notice["alert"], &notice["state"]),
        (&serde_json::json!("healthy"), &serde_json::json!("firing")),
        "{notice}"
    );
    // The hanging notices are still on their first try: none has ended, none was retried.
    for i in 0..HUNG {
        let a = o.client.alert(&format!("hung-{i}")).await?;
        assert_eq!(a.state, "firing", "{a:?}");
        assert_eq!(
            (a.sent, a.failed, a.last_error.as_deref()),
            (0, 0, None),
            "{a:?}"
        );
    }
    assert_eq!(hole.accepted(), HUNG, "no hanging notice was tried twice");
    o.stop().await;
    env.cleanup().await
}
