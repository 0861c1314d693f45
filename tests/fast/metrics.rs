//! Every metric the orchestrator and the workers declare follows the naming conventions
//! (`tasker_` prefix, counters and only counters ending in `_total`, no name twice — the two
//! share one recorder when they run in one process), and a task moves the latency metrics of
//! its template and handlers.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker::scrape::sample;
use tasker_client::CreateTask;

#[test]
fn every_declared_metric_follows_the_conventions() {
    let mut all = tasker_orchestration::metrics::ALL.to_vec();
    all.extend(tasker_worker::metrics::ALL);
    all.extend(tasker_shared::metric::SHARED);
    tasker_shared::metric::check(&all).unwrap();
    // The OTLP exporter counts under the names SHARED describes.
    let shared: Vec<&str> = tasker_shared::metric::SHARED
        .iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(
        shared,
        [
            tasker_telemetry::EXPORT_ERRORS,
            tasker_telemetry::SPANS_DROPPED
        ]
    );
}

/// Every metric family the Grafana dashboard in docs/ queries is one the orchestrator or the
/// workers declare (a histogram by its `_bucket` series), and it queries the latency ones.
#[test]
fn the_grafana_dashboard_queries_declared_metrics() -> anyhow::Result<()> {
    let file = tasker::repo_root().join("docs/grafana/tasker.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
    let mut declared: Vec<&str> = tasker_orchestration::metrics::ALL
        .iter()
        .map(|m| m.name)
        .collect();
    declared.extend(tasker_worker::metrics::ALL.iter().map(|m| m.name));
    let mut queried = std::collections::BTreeSet::new();
    for panel in doc["panels"].as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("tasker_") {
                    queried.insert(word.to_owned());
                }
            }
        }
    }
    for name in &queried {
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(
            declared.contains(&family),
            "{} queries {name}, which nothing declares",
            file.display()
        );
    }
    for latency in [
        "tasker_task_seconds_bucket",
        "tasker_worker_handler_duration_seconds_bucket",
        "tasker_worker_step_queue_seconds_bucket",
        "tasker_http_request_seconds_bucket",
    ] {
        assert!(queried.contains(latency), "the dashboard shows {latency}");
    }
    Ok(())
}

/// A completed task moves the end-to-end latency histogram of its template; its steps move the
/// queue and run histograms of their handler; the gauges of open tasks and enqueued steps are
/// exposed. (The orchestrator and the worker share one recorder in this process.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_task_moves_the_latency_histograms_of_its_template() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let scrape = || async {
        reqwest::get(format!("{}/metrics", o.url()))
            .await?
            .text()
            .await
    };
    let task_series = r#"tasker_task_seconds_count{namespace="rust_examples",template="linear",state="complete"}"#;
    let before = sample(&scrape().await?, task_series).unwrap_or(0.0);
    let task = o
        .run_task("rust_examples", "linear", json!({"value": 3}))
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    // The histogram is recorded by a task the executor spawns when the task finishes: wait for
    // it (bounded) rather than assume it ran.
    let page = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let page = scrape().await?;
            if sample(&page, task_series).unwrap_or(0.0) >= before + 1.0 {
                return anyhow::Ok(page);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("{task_series} did not move from {before} within 10 s"))??;
    let sum = sample(&page, &task_series.replace("_count{", "_sum{")).unwrap_or(0.0);
    assert!(sum > 0.0, "the task's seconds are recorded: {sum}");
    // linear's steps: `double`'s handler ran and waited in the queue, by its labels.
    for family in [
        "tasker_worker_handler_duration_seconds_count",
        "tasker_worker_step_queue_seconds_count",
    ] {
        let series =
            format!(r#"{family}{{namespace="rust_examples",template="linear",handler="double"}}"#);
        assert!(
            sample(&page, &series).unwrap_or(0.0) >= 1.0,
            "no {series} in:\n{}",
            page.lines()
                .filter(|l| l.starts_with(family))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // With no worker, a new task's first step waits enqueued; a task for later waits scheduled.
    worker.stop().await;
    let waiting = o
        .client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 1})))
        .await?;
    let later = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "linear")
                .delay("1h")
                .context(json!({"value": 1})),
        )
        .await?;
    let page = scrape().await?;
    for series in [
        r#"tasker_tasks_open{namespace="rust_examples",state="running"}"#,
        r#"tasker_tasks_open{namespace="rust_examples",state="scheduled"}"#,
        r#"tasker_steps_enqueued{namespace="rust_examples"}"#,
    ] {
        assert_eq!(sample(&page, series), Some(1.0), "{series}");
    }
    o.client.cancel(waiting.id).await?;
    o.client.cancel(later.id).await?;
    let page = scrape().await?;
    assert_eq!(
        sample(
            &page,
            r#"tasker_tasks_open{namespace="rust_examples",state="running"}"#
        ),
        Some(0.0),
        "a gauge whose tasks are gone reads 0"
    );
    o.stop().await;
    env.cleanup().await
}
