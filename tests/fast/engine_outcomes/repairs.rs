//! Repairs: the target of a repair (the failed step, or why not), and the resumption that runs
//! what can run and counts the open steps again.

use serde_json::{Value, json};
use uuid::Uuid;

use super::{CHAIN, World, call, failure, ids, result};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_targets_the_failed_step_or_says_why_not() -> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    let (b, ..) = w.step(chain, "b").await?;
    let target = |step: Option<Uuid>, resolution: Option<Value>| {
        let pool = w.store.pool().clone();
        async move {
            sqlx::query_scalar::<_, Value>(
                "SELECT to_jsonb(t) FROM tasker_repair_target($1, $2, $3) t",
            )
            .bind(chain)
            .bind(step)
            .bind(resolution)
            .fetch_one(&pool)
            .await
        }
    };
    let running = target(None, None).await?;
    assert_eq!(
        running["refused"]["refused"], "task_not_failed",
        "{running}"
    );
    call(
        &w,
        "tasker_apply_failure(st, $2)",
        a,
        &result(chain, a, failure(false)),
    )
    .await?;
    let failed = target(None, None).await?;
    assert_eq!(
        (ids(&failed["failed"]), &failed["refused"]),
        (vec![a], &Value::Null)
    );
    let not_it = target(Some(b), None).await?;
    assert_eq!(not_it["refused"]["refused"], "step_not_failed");
    let nowhere = target(Some(Uuid::now_v7()), None).await?;
    assert_eq!(nowhere["refused"]["refused"], "step_not_found");
    assert_eq!(w.state(chain, "a").await?, "failed", "nothing changed");
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_resumes_by_running_what_can_run_and_counting_open_steps_again()
-> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    call(
        &w,
        "tasker_apply_failure(st, $2)",
        a,
        &result(chain, a, failure(false)),
    )
    .await?;
    // What a retry did before resuming: the cancelled steps pending again, `a` to retry.
    sqlx::query(
        "UPDATE steps SET state = CASE WHEN id = $2 THEN 'waiting_retry' ELSE 'pending' END
         WHERE task_id = $1",
    )
    .bind(chain)
    .bind(a)
    .execute(w.store.pool())
    .await?;
    let resumed: Value =
        sqlx::query_scalar("SELECT tasker_repair_resume($1, ARRAY[$2::uuid], 'test', 'retried')")
            .bind(chain)
            .bind(a)
            .fetch_one(w.store.pool())
            .await?;
    let sent: Vec<Uuid> = resumed["dispatch"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["step_id"].as_str()?.parse().ok())
        .collect();
    assert_eq!(sent, vec![a], "{resumed}");
    assert_eq!(resumed["finished"], json!([]));
    assert_eq!(w.step(chain, "a").await?, (a, "enqueued".into(), 2));
    let (state, open): (String, i32) =
        sqlx::query_as("SELECT state::text, open_steps FROM tasks WHERE id = $1")
            .bind(chain)
            .fetch_one(w.store.pool())
            .await?;
    assert_eq!((state.as_str(), open), ("running", 3));
    w.done().await
}
