//! A large fan-out's count-down on tallies (migration 0036): results applied by several
//! sessions at once count on their own shards and leave the converging step's and the task's
//! rows alone; the check after the commit (`tasker_settle`) resolves each once, whichever
//! sessions run it; a failure on the engine's other paths folds the tallies in first.

use serde_json::{Value, json};
use uuid::Uuid;

use super::{BATCHES, World, call, failure, result, success};

/// A `batches` task split into `n` workers, all enqueued; returns the task and the workers.
async fn fan_out(w: &World, n: usize) -> anyhow::Result<(Uuid, Vec<Uuid>)> {
    let task = w.task(BATCHES).await?;
    let (split, ..) = w.step(task, "split").await?;
    let batches: Vec<usize> = (0..n).collect();
    call(
        w,
        "tasker_apply_shaped(st, $2)",
        split,
        &result(task, split, success(json!({ "batches": batches }))),
    )
    .await?;
    let workers: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM steps WHERE task_id = $1 AND step_type = 'batch_worker' ORDER BY id",
    )
    .bind(task)
    .fetch_all(w.store.pool())
    .await?;
    assert_eq!(workers.len(), n);
    Ok((task, workers))
}

/// Applies the workers' successes in batches of 100 on a connection of its own; returns the
/// tasks each answer says it counted on tallies.
async fn apply_all(w: &World, task: Uuid, workers: &[Uuid]) -> anyhow::Result<Vec<Vec<Uuid>>> {
    let mut conn = w.conn().await?;
    let mut tallied = Vec::new();
    for chunk in workers.chunks(100) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|&s| result(task, s, success(json!({"n": 1}))))
            .collect();
        let answer: Value = sqlx::query_scalar("SELECT tasker_apply_results($1::jsonb)")
            .bind(Value::from(batch))
            .fetch_one(&mut conn)
            .await?;
        assert_eq!(answer["accepted"], chunk.len(), "{answer}");
        tallied.push(super::ids(&answer["tallied"]));
    }
    Ok(tallied)
}

/// The step's pending parents and the sum of its tallies; the task's open steps and theirs.
async fn counts(w: &World, task: Uuid, step: Uuid) -> anyhow::Result<(i32, i64, i32, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT pending_parents FROM steps WHERE id = $2),
                (SELECT COALESCE(sum(n), 0) FROM step_tallies WHERE step_id = $2),
                (SELECT open_steps FROM tasks WHERE id = $1),
                (SELECT COALESCE(sum(n), 0) FROM task_tallies WHERE task_id = $1)",
    )
    .bind(task)
    .bind(step)
    .fetch_one(w.store.pool())
    .await?)
}

async fn transitions(w: &World, task: Uuid, step: Option<Uuid>, to: &str) -> anyhow::Result<i64> {
    tasker::transitions_into(w.store.pool(), task, step, to).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_fan_out_counts_on_tallies_and_each_settle_resolves_it_once() -> anyhow::Result<()>
{
    let w = World::new().await?;
    let (task, workers) = fan_out(&w, 1_200).await?;
    let (sum, ..) = w.step(task, "sum").await?;
    let shards: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM step_tallies WHERE step_id = $2),
                (SELECT count(*) FROM task_tallies WHERE task_id = $1)",
    )
    .bind(task)
    .bind(sum)
    .fetch_one(w.store.pool())
    .await?;
    assert_eq!(
        shards,
        (16, 16),
        "one tally row per shard for the step and the task"
    );
    // The split's own success is counted already (on its session's shard).
    let (before, tally_before, open_before, task_tally_before) = counts(&w, task, sum).await?;

    // Two sessions at once, all but the last two workers.
    let (a, b) = workers[..1_198].split_at(599);
    let (ta, tb) = tokio::try_join!(apply_all(&w, task, a), apply_all(&w, task, b))?;
    for t in ta.iter().chain(&tb) {
        assert_eq!(t, &vec![task], "every answer names the task to settle");
    }
    assert_eq!(w.state(task, "sum").await?, "pending");
    assert_eq!(
        counts(&w, task, sum).await?,
        (
            before,
            tally_before + 1_198,
            open_before,
            task_tally_before + 1_198
        ),
        "the rows were not touched; the tallies hold every count"
    );
    // A settle with nothing to resolve changes nothing.
    w.store.settle(&[task]).await?;
    assert_eq!(w.state(task, "sum").await?, "pending");

    // The last two at once, each followed by its settle, also at once.
    let last = |s: Uuid| {
        let w = &w;
        async move {
            apply_all(w, task, &[s]).await?;
            anyhow::Ok(w.store.settle(&[task]).await?)
        }
    };
    let (ea, eb) = tokio::try_join!(last(workers[1_198]), last(workers[1_199]))?;
    let dispatched: Vec<Uuid> = ea
        .dispatch
        .iter()
        .chain(&eb.dispatch)
        .map(|m| m.step_id)
        .collect();
    assert_eq!(dispatched, vec![sum], "the convergence step is sent once");
    assert_eq!(w.state(task, "sum").await?, "enqueued");
    assert_eq!(transitions(&w, task, Some(sum), "enqueued").await?, 1);
    let (pending, step_tally, ..) = counts(&w, task, sum).await?;
    assert_eq!((pending, step_tally), (0, 0), "folded into the row");
    assert_eq!(
        w.store.unsettled(100).await?,
        vec![task],
        "the task's tallies"
    );

    // The convergence step's success is counted on the task's tallies too; the settle after
    // it completes the task once, and a second settle finds nothing.
    let applied = w
        .store
        .apply_results(&[result(task, sum, success(json!({"total": 1})))])
        .await?;
    assert_eq!(applied.tallied, vec![task]);
    assert_eq!(w.state(task, "sum").await?, "completed");
    let state: String = sqlx::query_scalar("SELECT state::text FROM tasks WHERE id = $1")
        .bind(task)
        .fetch_one(w.store.pool())
        .await?;
    assert_eq!(state, "running", "only the settle completes it");
    let settled = w.store.settle(&[task]).await?;
    assert_eq!(settled.finished.len(), 1, "{settled:?}");
    assert!(w.store.settle(&[task]).await?.finished.is_empty());
    let (_, _, open, task_tally) = counts(&w, task, sum).await?;
    assert_eq!((open, task_tally), (0, 0));
    assert_eq!(transitions(&w, task, None, "complete").await?, 1);
    assert!(w.store.unsettled(100).await?.is_empty());
    w.done().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_in_a_large_fan_out_folds_the_tallies_before_counting_down() -> anyhow::Result<()>
{
    let w = World::new().await?;
    let (task, workers) = fan_out(&w, 1_000).await?;
    let (sum, ..) = w.step(task, "sum").await?;
    apply_all(&w, task, &workers[..999]).await?;
    assert_eq!(w.state(task, "sum").await?, "pending");
    // The last worker fails for good (on_failure: continue): the general path counts it down
    // on the row, after folding in the tallies, and the convergence step runs at once.
    let answer: Value = sqlx::query_scalar("SELECT tasker_apply_results($1::jsonb)")
        .bind(json!([result(task, workers[999], failure(false))]))
        .fetch_one(w.store.pool())
        .await?;
    assert_eq!(answer["accepted"], 1, "{answer}");
    assert_eq!(w.state(task, "sum").await?, "enqueued", "{answer}");
    let (pending, step_tally, ..) = counts(&w, task, sum).await?;
    assert_eq!((pending, step_tally), (0, 0));
    assert_eq!(transitions(&w, task, Some(sum), "enqueued").await?, 1);
    w.done().await
}
