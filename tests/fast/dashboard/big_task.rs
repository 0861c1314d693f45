//! A big task in the dashboard (`tests/dashboard/big_task.mjs`): 300 batch instances, one failed,
//! shown in graph order with the batch folded into one group, a "failed only" view kept in the
//! address, and both colour schemes readable.

use tasker::TestEnv;

use super::clean_tour;

/// Batches of `rust_examples/batch_numbers_continue`: 0..3000 in tens.
const BATCHES: u64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_task_reads_in_graph_order_with_its_batch_folded_and_its_failures_one_click_away()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let task = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "batch_numbers_continue").context(
                serde_json::json!({"count": BATCHES * 10, "batch_size": 10, "fail_batch": 7}),
            ),
        )
        .await?;
    let done = o.wait(task.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let report = clean_tour(
        "big_task.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("TASK_ID", task.id.to_string()),
            ("FAILED", "sum#7".into()),
            ("BATCH_COUNT", BATCHES.to_string()),
            ("ROOT", "split".into()),
        ],
    )
    .await?;
    assert_eq!(report["ok"], true, "{report}");
    // The 302-step page was 43,778 px tall with a card a step; folded, it is a few screens.
    let height = report["pageHeight"].as_u64().unwrap_or(u64::MAX);
    assert!(height < 6_000, "page height {height} px: {report}");
    println!(
        "302 steps: {height} px folded, {} px unfolded",
        report["unfolded"]["pageHeight"]
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
