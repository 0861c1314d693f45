//! Successes: plain steps completed, counted down, enqueued and closed in one statement, alone,
//! as a whole batch and as a run in a mixed batch; a decision's or a batchable step's success
//! shaping the DAG, or failing the step if it cannot be used.

use serde_json::{Value, json};

use super::{BATCHES, BRANCHES, CHAIN, World, call, ids, result, success};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_successes_complete_count_down_enqueue_and_close_in_one_statement()
-> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    let r = result(chain, a, success(json!({"v": 1})));
    let mut conn = w.conn().await?;
    let ok: Value = sqlx::query_scalar(
        "SELECT to_jsonb(s) FROM tasker_succeed_steps(ARRAY[$1::uuid], ARRAY[$2::uuid], ARRAY[1], ARRAY[$3::jsonb]) s",
    )
    .bind(a)
    .bind(chain)
    .bind(&r)
    .fetch_one(&mut conn)
    .await?;
    let mut enqueued = ids(&ok["enqueued"]);
    enqueued.sort();
    let mut children = vec![w.step(chain, "b").await?.0, w.step(chain, "c").await?.0];
    children.sort();
    assert_eq!(enqueued, children, "{ok}");
    assert_eq!(ok["skip"], json!([]));
    assert_eq!(ok["finished"], json!([]));
    assert_eq!(w.state(chain, "a").await?, "completed");
    assert_eq!(w.step(chain, "b").await?.1, "enqueued");
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_plain_successes_skips_what_can_no_longer_run() -> anyhow::Result<()> {
    let w = World::new().await?;
    let branches = w.task(BRANCHES).await?;
    let (d, ..) = w.step(branches, "d").await?;
    // The decision chose x: y is skipped, so w waits for x alone.
    w.store
        .apply_results(&[serde_json::from_value::<tasker_shared::StepResult>(
            result(branches, d, success(json!({"branches": ["x"]}))),
        )?])
        .await?;
    let (x, state, attempt) = w.step(branches, "x").await?;
    assert_eq!((state.as_str(), attempt), ("enqueued", 1));
    let mut conn = w.conn().await?;
    let ok: Value = sqlx::query_scalar(
        "SELECT to_jsonb(s) FROM tasker_apply_successes(ARRAY[$1::uuid], ARRAY[$2::uuid], ARRAY[1], ARRAY[$3::jsonb]) s",
    )
    .bind(x)
    .bind(branches)
    .bind(result(branches, x, success(json!(2))))
    .fetch_one(&mut conn)
    .await?;
    assert_eq!(ids(&ok["enqueued"]), vec![w.step(branches, "w").await?.0]);
    assert_eq!(ok["ready"], json!([]));
    assert_eq!(w.state(branches, "y").await?, "skipped");
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_successes_leaves_out_steps_an_earlier_result_closed() -> anyhow::Result<()> {
    let w = World::new().await?;
    let (t1, t2) = (w.task(CHAIN).await?, w.task(CHAIN).await?);
    let (a1, a2) = (w.step(t1, "a").await?.0, w.step(t2, "a").await?.0);
    sqlx::query("SELECT tasker_end_task($1, 'cancelled', NULL, 'test')")
        .bind(t2)
        .execute(w.store.pool())
        .await?;
    let mut conn = w.conn().await?;
    let run: Value = sqlx::query_scalar(
        "SELECT to_jsonb(s) FROM tasker_apply_run(ARRAY[$1::uuid, $2], ARRAY[$3::uuid, $4], ARRAY[1, 1], ARRAY[$5::jsonb, $6]) s",
    )
    .bind(a1)
    .bind(a2)
    .bind(t1)
    .bind(t2)
    .bind(result(t1, a1, success(json!(1))))
    .bind(result(t2, a2, success(json!(1))))
    .fetch_one(&mut conn)
    .await?;
    assert_eq!(run["accepted"], 1, "{run}");
    assert_eq!(ids(&run["gone"]), vec![a2]);
    assert_eq!(w.state(t1, "a").await?, "completed");
    assert_eq!(w.state(t2, "a").await?, "cancelled");
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_or_batchable_success_shapes_the_dag_or_fails_if_unusable() -> anyhow::Result<()>
{
    let w = World::new().await?;
    // A decision: the branch not chosen is skipped, the chosen one enqueued.
    let branches = w.task(BRANCHES).await?;
    let (d, ..) = w.step(branches, "d").await?;
    let decided = call(
        &w,
        "tasker_apply_shaped(st, $2)",
        d,
        &result(branches, d, success(json!({"branches": ["y"]}))),
    )
    .await?;
    assert_eq!(
        ids(&decided["enqueued"]),
        vec![w.step(branches, "y").await?.0],
        "{decided}"
    );
    assert_eq!(w.state(branches, "x").await?, "skipped");
    assert_eq!(w.state(branches, "d").await?, "completed");
    // A batchable step: one instance per batch, written enqueued at attempt 1 (no limits:
    // nothing to claim), to publish.
    let batches = w.task(BATCHES).await?;
    let (split, ..) = w.step(batches, "split").await?;
    let split_up = call(
        &w,
        "tasker_apply_shaped(st, $2)",
        split,
        &result(batches, split, success(json!({"batches": [1, 2]}))),
    )
    .await?;
    assert_eq!(ids(&split_up["enqueued"]).len(), 2, "{split_up}");
    assert!(ids(&split_up["ready"]).is_empty(), "{split_up}");
    let (work, state, attempt) = w.step(batches, "work#1").await?;
    assert_eq!((state.as_str(), attempt), ("enqueued", 1));
    assert!(ids(&split_up["enqueued"]).contains(&work), "{split_up}");
    assert_eq!(w.state(batches, "sum").await?, "pending");
    // An unusable answer fails the step for good.
    let other = w.task(BRANCHES).await?;
    let (d2, ..) = w.step(other, "d").await?;
    let refused = call(
        &w,
        "tasker_apply_shaped(st, $2)",
        d2,
        &result(other, d2, success(json!({"branches": ["nowhere"]}))),
    )
    .await?;
    assert_eq!(
        refused["finished"],
        json!([{"task_id": other, "state": "error"}]),
        "{refused}"
    );
    w.done().await
}
