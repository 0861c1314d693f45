//! Failures: a retryable one waits for its backoff (or runs again at once if the handler asks);
//! one for good ends its task, unless it is a batch worker's under `on_failure: continue`.

use serde_json::{Value, json};

use super::{BATCHES, CHAIN, World, call, failure, ids, result, success};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_failure_waits_for_its_backoff_or_runs_again_at_once() -> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    w.store
        .apply_results(&[serde_json::from_value::<tasker_shared::StepResult>(
            result(chain, a, success(json!(1))),
        )?])
        .await?;
    let (b, ..) = w.step(chain, "b").await?;
    let later = call(
        &w,
        "tasker_apply_retry(st, $2)",
        b,
        &result(chain, b, failure(true)),
    )
    .await?;
    assert_eq!(later["ready"], json!([]), "{later}");
    assert_eq!(later["retry"]["delay_ms"], 60000);
    assert_eq!(w.state(chain, "b").await?, "waiting_retry");
    // A handler that asks to be retried at once.
    let c = w.step(chain, "c").await?.0;
    let mut now = failure(true);
    now["retry_after_ms"] = json!(0);
    let at_once = call(&w, "tasker_apply_retry(st, $2)", c, &result(chain, c, now)).await?;
    assert_eq!(ids(&at_once["ready"]), vec![c], "{at_once}");
    assert_eq!(at_once["retry"], Value::Null);
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_for_good_ends_its_task_unless_its_batch_may_continue() -> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    let ended = call(
        &w,
        "tasker_apply_failure(st, $2)",
        a,
        &result(chain, a, failure(false)),
    )
    .await?;
    assert_eq!(
        ended["finished"],
        json!([{"task_id": chain, "state": "error"}]),
        "{ended}"
    );
    assert_eq!(w.state(chain, "a").await?, "failed");
    assert_eq!(w.state(chain, "b").await?, "cancelled");
    // A batch worker under `on_failure: continue`: recorded, counted off its children.
    let batches = w.task(BATCHES).await?;
    let (split, ..) = w.step(batches, "split").await?;
    w.store
        .apply_results(&[serde_json::from_value::<tasker_shared::StepResult>(
            result(batches, split, success(json!({"batches": [{"n": 1}]}))),
        )?])
        .await?;
    let (work, ..) = w.step(batches, "work#0").await?;
    let went_on = call(
        &w,
        "tasker_apply_failure(st, $2)",
        work,
        &result(batches, work, failure(false)),
    )
    .await?;
    assert_eq!(went_on["finished"], json!([]), "{went_on}");
    assert_eq!(
        ids(&went_on["ready"]),
        vec![w.step(batches, "sum").await?.0]
    );
    assert_eq!(ids(&went_on["closed"]), vec![batches]);
    assert_eq!(w.state(batches, "work#0").await?, "failed");
    w.done().await
}
