//! Long lists in the dashboard (`tests/dashboard/lists.mjs`): 70 template versions and 60
//! schedules paged and searchable with the view in the address, the schedules page within a
//! 1,280 px window, the task list's lookup by id prefix and by idempotency key, saved views.

use tasker::TestEnv;
use tasker_client::{CreateTask, Overlap, ScheduleSpec};

use super::clean_tour;

/// A one-step template of the `lists` namespace.
fn template(name: &str) -> String {
    format!(
        "namespace: lists\nname: {name}\nversion: 1.0.0\nsteps:\n  - name: only\n    handler: only\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lists_are_paged_and_searched_in_the_address_and_a_task_is_found_by_id_or_key()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    // 70 templates, 7 of them named `report_…`; 60 schedules of the first, never due.
    for i in 0..70 {
        let name = if i % 10 == 3 {
            format!("report_{i:02}")
        } else {
            format!("step_{i:02}")
        };
        o.client
            .register_template(&template(&name), None, None)
            .await?;
    }
    for i in 0..60 {
        let spec = ScheduleSpec {
            namespace: "lists".into(),
            name: format!("nightly_{i:02}_{}", "x".repeat(40)),
            template: "step_00".into(),
            version: None,
            cron: "0 0 3 1 1 *".into(),
            timezone: "UTC".into(),
            context: Some(serde_json::json!({"region": "eu-west-1", "note": "y".repeat(300)})),
            overlap: Overlap::Skip,
            catch_up: None,
        };
        o.client.put_schedule(&spec).await?;
    }
    let templates = o.client.templates(None, None).await?.len();
    let schedules = o.client.schedules(None).await?.len();
    let key = format!("lists-{}", uuid::Uuid::now_v7());
    let task = o
        .client
        .create_task(&CreateTask::new("lists", "step_00").idempotency_key(key.clone()))
        .await?;
    let report = clean_tour(
        "lists.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("EXPECT_TEMPLATES", templates.to_string()),
            ("EXPECT_SCHEDULES", schedules.to_string()),
            ("SEARCH", "report_".into()),
            ("SEARCH_COUNT", "7".into()),
            ("TASK_ID", task.id.to_string()),
            ("IDEMPOTENCY_KEY", key),
        ],
    )
    .await?;
    println!("{report}");
    o.stop().await;
    env.cleanup().await
}
