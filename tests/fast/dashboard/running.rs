//! A running step in the dashboard (`tests/dashboard/running.mjs`): shown `running` on its worker
//! while its handler sleeps, its timeline bar growing, then `completed` live.

use tasker::TestEnv;

use super::clean_tour;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_step_shows_its_worker_and_a_growing_bar() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config
        .orchestrator
        .templates
        .push(tasker::repo_root().join("tests/fixtures/task_templates/composition"));
    let o = env.orchestrator().await?;
    // Long enough that the bar is still growing when a loaded machine's browser first shows it
    // (a 6 s nap was first seen running 5.3 s in, and ended before it could grow).
    let (worker, task) = tasker::napping(&mut env, &o, 15_000).await?;
    let report = clean_tour(
        "running.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("TASK_ID", task.id.to_string()),
            ("STEP", "nap".into()),
            ("WORKER", worker.name.clone()),
        ],
    )
    .await?;
    assert_eq!(report["nodeState"], "running", "{report}");
    assert_eq!(report["barGrew"], true, "{report}");
    assert_eq!(report["openBarsAfter"], 0, "{report}");
    let title = report["barTitle"].as_str().unwrap_or_default();
    assert!(
        title.starts_with(&format!("running on {} for ", worker.name)),
        "{report}"
    );
    println!(
        "shown running {} ms after the page opened",
        report["runningAfterMs"]
    );
    assert_eq!(o.wait(task.id).await?.state, "complete");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
