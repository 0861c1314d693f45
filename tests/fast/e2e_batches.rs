//! Batch processing: a batchable step splits its input, one batch worker runs per batch, a
//! convergence step aggregates. Edge cases and the CSV workflow checked against an independent
//! computation.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use tasker::{Cluster, repo_root, steps_by_name, stray_steps_and_edges};

async fn run(cluster: &Cluster, name: &str, context: Value) -> anyhow::Result<tasker_client::Task> {
    let o = &cluster.orchestrator;
    let task = o
        .client
        .create_task(&tasker_client::CreateTask::new("rust_examples", name).context(context))
        .await?;
    let task = o
        .client
        .task(task.id, Some(Duration::from_secs(120)))
        .await?;
    anyhow::ensure!(task.is_terminal(), "task {} still running", task.id);
    Ok(task)
}

fn gauss(n: u64) -> u64 {
    n * n.saturating_sub(1) / 2
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_products_matches_an_independent_computation() -> anyhow::Result<()> {
    let csv_path = repo_root().join("tests/fixtures/products.csv");
    // Independent computation straight from the file.
    let mut per_category: BTreeMap<String, u64> = BTreeMap::new();
    let (mut rows, mut value_cents) = (0u64, 0i64);
    for record in csv::Reader::from_path(&csv_path)?.records() {
        let record = record?;
        let price: f64 = record[4].parse()?;
        let stock: i64 = record[5].parse()?;
        value_cents += (price * 100.0).round() as i64 * stock;
        *per_category.entry(record[3].to_owned()).or_default() += 1;
        rows += 1;
    }
    assert_eq!(rows, 1000);

    let cluster = Cluster::start().await?;
    let task = run(
        &cluster,
        "csv_products",
        json!({"csv_path": csv_path, "batch_size": 200}),
    )
    .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    let result = &task.result.as_ref().unwrap()["aggregate"];
    assert_eq!(result["rows_processed"], rows);
    assert_eq!(result["per_category"], json!(per_category));
    assert_eq!(result["total_inventory_value_cents"], value_cents);
    assert_eq!(result["batches"], 5);
    let steps = steps_by_name(&cluster.orchestrator.client, task.id).await?;
    let batches: Vec<_> = steps.keys().filter(|n| n.starts_with("process#")).collect();
    assert_eq!(
        batches,
        vec![
            "process#0",
            "process#1",
            "process#2",
            "process#3",
            "process#4"
        ]
    );
    assert!(steps.values().all(|s| s.state == "completed"));
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_one_and_uneven_batches() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    for (count, size, batches) in [(0u64, 100u64, 0u64), (50, 100, 1), (1050, 100, 11)] {
        let task = run(
            &cluster,
            "batch_numbers",
            json!({"count": count, "batch_size": size}),
        )
        .await?;
        assert_eq!(task.state, "complete", "count {count}: {task:?}");
        assert_eq!(
            task.result.as_ref().unwrap()["total"],
            json!({"sum": gauss(count), "count": count, "batches": batches, "failed_batches": 0}),
            "count {count}"
        );
        let steps = steps_by_name(&cluster.orchestrator.client, task.id).await?;
        assert_eq!(steps.len() as u64, 2 + batches, "count {count}");
        if count == 1050 {
            assert_eq!(
                steps["sum#10"].result.as_ref().unwrap()["count"],
                50,
                "uneven last batch"
            );
        }
    }
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_batch_fails_the_task_or_is_reported_per_policy() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let context = json!({"count": 500, "batch_size": 100, "fail_batch": 2});
    let failed = run(&cluster, "batch_numbers", context.clone()).await?;
    assert_eq!(failed.state, "error");
    assert_eq!(failed.error.as_ref().unwrap()["step"], "sum#2");
    let steps = steps_by_name(&cluster.orchestrator.client, failed.id).await?;
    assert_eq!(steps["total"].state, "cancelled");

    let reported = run(&cluster, "batch_numbers_continue", context).await?;
    assert_eq!(reported.state, "complete", "{reported:?}");
    assert_eq!(
        reported.result.as_ref().unwrap()["total"],
        json!({"sum": gauss(500) - (200..300).sum::<u64>(), "count": 400, "batches": 4, "failed_batches": 1})
    );
    let steps = steps_by_name(&cluster.orchestrator.client, reported.id).await?;
    assert_eq!(steps["sum#2"].state, "failed");
    assert_eq!(steps["total"].state, "completed");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_batches() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let started = std::time::Instant::now();
    let task = run(
        &cluster,
        "batch_numbers",
        json!({"count": 10_000, "batch_size": 1}),
    )
    .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(
        task.result.as_ref().unwrap()["total"],
        json!({"sum": gauss(10_000), "count": 10_000, "batches": 10_000, "failed_batches": 0})
    );
    let steps: i64 = sqlx::query_scalar("SELECT count(*) FROM steps WHERE task_id = $1")
        .bind(task.id)
        .fetch_one(cluster.orchestrator.shared.store.pool())
        .await?;
    assert_eq!(steps, 10_002);
    assert_eq!(
        stray_steps_and_edges(cluster.orchestrator.shared.store.pool()).await?,
        0
    );
    eprintln!("10,000 batches completed in {:?}", started.elapsed());
    cluster.shutdown().await
}

#[test]
fn products_csv_is_what_its_generator_writes() -> anyhow::Result<()> {
    let out = std::process::Command::new("python3")
        .arg(repo_root().join("tests/fixtures/generate_products.py"))
        .arg("--check")
        .output()?;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
