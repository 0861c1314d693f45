//! Two orchestrators and two workers on one database and broker: many tasks, submitted to both,
//! each completes exactly once with the right result, and both orchestrators apply results; the
//! gauges counted from the database are reported by one of them.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker::scrape::sample;
use tasker_client::CreateTask;
use tasker_orchestration::events::Event;
use tokio::sync::broadcast;

#[path = "cluster/replica.rs"]
mod replica;

fn accepted(rx: &mut broadcast::Receiver<Event>) -> usize {
    let mut n = 0;
    while let Ok(e) = rx.try_recv() {
        if let Event::ResultsApplied { accepted, .. } = e {
            n += accepted;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_orchestrators_complete_every_task_exactly_once() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let a = env.orchestrator().await?;
    let b = env.orchestrator().await?;
    let workers = [env.rust_worker(), env.rust_worker()];
    let (mut events_a, mut events_b) = (a.events().subscribe(), b.events().subscribe());
    let mut runs = Vec::new();
    for i in 0..60i64 {
        // Round-robin over both orchestrators, and wait on the other one.
        let (submit, wait) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let (submit, wait) = (submit.client.clone(), wait.client.clone());
        runs.push(tokio::spawn(async move {
            let t = submit
                .create_task(
                    &tasker_client::CreateTask::new("rust_examples", "diamond")
                        .context(json!({ "value": i })),
                )
                .await?;
            let done = wait.task(t.id, Some(Duration::from_secs(60))).await?;
            anyhow::Ok((i, done))
        }));
    }
    for run in runs {
        let (i, task) = run.await??;
        assert_eq!(task.state, "complete", "task {i}");
        assert_eq!(
            task.result,
            Some(json!({"join": {"value": 4 * i * i + 2 * i + 10}})),
            "task {i}"
        );
    }
    let pool = a.shared.store.pool();
    let per_task: Vec<(i64,)> = sqlx::query_as(
        "SELECT count(*) FROM transitions WHERE step_id IS NULL AND to_state = 'complete'
         GROUP BY task_id",
    )
    .fetch_all(pool)
    .await?;
    assert_eq!(per_task.len(), 60);
    assert!(
        per_task.iter().all(|(n,)| *n == 1),
        "each task completes once"
    );
    let completions: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM transitions WHERE step_id IS NOT NULL AND to_state = 'completed'",
    )
    .fetch_one(pool)
    .await?;
    assert_eq!(completions, 60 * 4, "each step completes exactly once");
    let (by_a, by_b) = (accepted(&mut events_a), accepted(&mut events_b));
    assert_eq!(by_a + by_b, 240);
    assert!(
        by_a > 0 && by_b > 0,
        "both orchestrators applied results: {by_a} / {by_b}"
    );
    for w in workers {
        w.stop().await;
    }
    a.stop().await;
    b.stop().await;
    env.cleanup().await
}

/// With two orchestrators on one database, the gauges counted from it are reported by one of
/// them only — the one that started first — so summing every orchestrator's scrape, as the
/// Grafana dashboard's `sum by (…)` queries do, reads the true count, not twice it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_gauges_are_reported_once_by_two_orchestrators() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let first = env.orchestrator().await?;
    let second = env.orchestrator().await?;
    // No worker: each task's first step waits enqueued, each task stays running.
    for i in 0..3 {
        first
            .client
            .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": i})))
            .await?;
    }
    let mut pages = Vec::new();
    for o in [&first, &second] {
        pages.push(
            reqwest::get(format!("{}/metrics", o.url()))
                .await?
                .text()
                .await?,
        );
    }
    let open = r#"tasker_tasks_open{namespace="rust_examples",state="running"}"#;
    let enqueued = r#"tasker_steps_enqueued{namespace="rust_examples"}"#;
    for series in [open, enqueued] {
        let summed: f64 = pages.iter().filter_map(|p| sample(p, series)).sum();
        assert_eq!(summed, 3.0, "{series}, summed over both scrapes");
    }
    for family in tasker_orchestration::metrics::CLUSTER_GAUGES {
        // The family itself (`tasker_steps_running` is the start of another family's name).
        let named = |line: &&str| {
            let name = line.strip_prefix("# TYPE ").unwrap_or(line);
            name.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        };
        let left = pages[1].lines().find(named);
        assert_eq!(left, None, "the second leaves {family} out");
    }
    // Those with a series whatever the database holds (workers and slots have none here).
    for family in [
        "tasker_tasks_open",
        "tasker_steps_enqueued",
        "tasker_steps_unserved",
        "tasker_steps_waiting",
        "tasker_tasks_scheduled",
        "tasker_steps_throttled",
    ] {
        let typed = format!("# TYPE {family} gauge");
        assert!(pages[0].contains(&typed), "the first reports {family}");
    }
    // Everything else each reports for itself.
    assert!(
        pages[1].contains("tasker_tasks_created_total"),
        "{}",
        pages[1]
    );
    second.stop().await;
    first.stop().await;
    env.cleanup().await
}
