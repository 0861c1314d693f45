//! Signals: one that arrives before its wait is kept and consumed when the wait begins (sent
//! twice with one id, once; refused when it conflicts, is badly named or comes too late); a
//! signal wait that times out fails, skips or continues as its template says, and a retry waits
//! again; the fixtures' `signal_wait` template with a worker.

use std::time::Duration;

use serde_json::json;
use tasker::{Cluster, RunningOrchestrator, TestEnv, steps_by_name};
use tasker_client::CreateTask;

use super::{api_code, create, register, step, until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_that_arrives_before_its_wait_is_consumed_when_the_wait_begins()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o, "approve", "  - name: first\n    wait: {sleep: 1s}\n  - name: approval\n    depends_on: [first]\n    wait: {signal: approved, timeout: 30s}\n").await?;
    let task = o.client.create_task(&create("approve")).await?;
    assert_eq!(step(&o, task.id, "approval").await?.state, "pending");
    let payload = json!({"by": "alice", "big": 9_007_199_254_740_993_u64});
    let sent = o
        .client
        .signal(
            task.id,
            "approved",
            Some(payload.clone()),
            Some("s-1".into()),
        )
        .await?;
    assert!(sent.created);
    let again = o
        .client
        .signal(
            task.id,
            "approved",
            Some(payload.clone()),
            Some("s-1".into()),
        )
        .await?;
    assert!(!again.created, "the same signal again is a no-op");
    let e = o
        .client
        .signal(
            task.id,
            "approved",
            Some(json!({"by": "bob"})),
            Some("s-1".into()),
        )
        .await
        .expect_err("conflict");
    assert_eq!(api_code(&e), (409, "signal_conflict"));
    let e = o
        .client
        .signal(task.id, "not a name", None, None)
        .await
        .expect_err("bad name");
    assert_eq!(api_code(&e), (400, "invalid_signal_name"));

    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(step(&o, task.id, "approval").await?.result, Some(payload));
    let signals = o.client.signals(task.id).await?;
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].consumed_by.as_deref(), Some("approval"));
    let e = o
        .client
        .signal(task.id, "approved", None, None)
        .await
        .expect_err("finished");
    assert_eq!(api_code(&e), (409, "task_finished"));
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_timeout_fails_skips_or_continues_and_a_retry_waits_again() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    for policy in ["fail", "skip", "continue"] {
        let steps = format!(
            "  - name: approval\n    wait: {{signal: ok, timeout: 1s, on_timeout: {policy}}}\n  - name: after\n    depends_on: [approval]\n    wait: {{sleep: 0s}}\n"
        );
        register(&o, &format!("timeout_{policy}"), &steps).await?;
    }
    let ids: Vec<_> = create_each(&o, ["fail", "skip", "continue"]).await?;
    let [fail, skip, cont] = [ids[0], ids[1], ids[2]];

    let t = o.client.wait(skip, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    let steps = steps_by_name(&o.client, skip).await?;
    assert_eq!(steps["approval"].state, "skipped");
    assert_eq!(
        steps["after"].state, "skipped",
        "downstream is skipped like an unchosen branch"
    );

    let t = o.client.wait(cont, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    assert_eq!(
        step(&o, cont, "approval").await?.result,
        Some(json!({"timed_out": true}))
    );
    assert_eq!(step(&o, cont, "after").await?.state, "completed");

    let t = o.client.wait(fail, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "error");
    let approval = step(&o, fail, "approval").await?;
    assert_eq!(
        approval.error.map(|e| e["kind"].clone()),
        Some(json!("wait_timed_out"))
    );
    // A retry waits again; a signal then completes it.
    o.client.retry(fail, &Default::default()).await?;
    until(
        &o,
        Duration::from_secs(5),
        "the retried step waits",
        || async { Ok(step(&o, fail, "approval").await?.state == "waiting") },
    )
    .await?;
    o.client
        .signal(fail, "ok", Some(json!("yes")), None)
        .await?;
    let t = o.client.wait(fail, Duration::from_secs(10)).await?;
    assert_eq!(t.state, "complete");
    let approval = step(&o, fail, "approval").await?;
    assert_eq!((approval.result, approval.attempt), (Some(json!("yes")), 2));
    o.stop().await;
    env.cleanup().await
}

async fn create_each<const N: usize>(
    o: &RunningOrchestrator,
    policies: [&str; N],
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let mut ids = Vec::new();
    for p in policies {
        ids.push(
            o.client
                .create_task(&create(&format!("timeout_{p}")))
                .await?
                .id,
        );
    }
    Ok(ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signal_wait_template_runs_with_a_worker() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let o = &cluster.orchestrator;
    let task = o
        .client
        .create_task(&CreateTask::new("rust_examples", "signal_wait").context(json!({"value": 4})))
        .await?;
    o.client
        .signal(
            task.id,
            "approved",
            Some(json!({"approved_by": "rust"})),
            None,
        )
        .await?;
    let done = o.client.wait(task.id, Duration::from_secs(10)).await?;
    assert_eq!(
        done.result,
        Some(json!({"finish": {"value": 8, "approved_by": "rust"}}))
    );
    cluster.shutdown().await
}
