//! A batch of results takes effect in the batch's order, exactly as if each were applied alone.

use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::{StepState, TaskState, TaskTemplate};

use super::{Engine, ROOTS, SINGLE, failure, result, success};

/// The results of a batch take effect in the batch's order (task, then step), exactly as if
/// each were applied alone: plain successes are written together (tasker_complete_steps), so
/// this checks a failure after one sees it written, one before it cancels it, and a duplicate
/// counts once; tasks whose last step closed in the batch complete together, once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_takes_effect_in_order_as_if_each_result_were_applied_alone() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let roots = TaskTemplate::load(ROOTS, "roots.yaml")?;
    // Each task's roots `a` and `b`, by id (the order a batch is applied in).
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let task = engine.create(&roots).await?;
        let (a, b) = (
            engine.step_id(task, "a").await?,
            engine.step_id(task, "b").await?,
        );
        tasks.push((task, a.min(b), a.max(b), a, b));
    }
    let [
        (t1, t1_lo, t1_hi, ..),
        (t2, t2_lo, t2_hi, ..),
        (t3, _, _, t3_a, t3_b),
    ] = tasks[..]
    else {
        unreachable!()
    };
    // Two one-step tasks that complete in the batch.
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    let (t4, t5) = (engine.create(&single).await?, engine.create(&single).await?);
    let (t4_only, t5_only) = (
        engine.step_id(t4, "only").await?,
        engine.step_id(t5, "only").await?,
    );
    let mut batch = vec![
        // t1: a success, then a permanent failure that ends the task.
        result(t1, t1_lo, success()),
        result(t1, t1_hi, failure(false)),
        // t2: a permanent failure first: it cancels the other root, whose success is stale.
        result(t2, t2_lo, failure(false)),
        result(t2, t2_hi, success()),
        // t3: both roots succeed, one of them reported twice; `c` becomes ready.
        result(t3, t3_a, success()),
        result(t3, t3_a, success()),
        result(t3, t3_b, success()),
        result(t4, t4_only, success()),
        result(t5, t5_only, success()),
    ];
    batch.reverse();
    let effects = engine.store.apply_results(&batch).await?;

    let counts = effects.results.expect("a batch of results");
    assert_eq!(counts.accepted, 7);
    let mut ignored = counts.ignored;
    ignored.sort();
    let mut stale = vec![t2_hi, t3_a];
    stale.sort();
    assert_eq!(ignored, stale, "t2's late success and t3's duplicate");

    let mut finished = effects.finished;
    finished.sort_by_key(|(task, _)| *task);
    let mut ended = vec![
        (t1, TaskState::Error),
        (t2, TaskState::Error),
        (t4, TaskState::Complete),
        (t5, TaskState::Complete),
    ];
    ended.sort_by_key(|(task, _)| *task);
    assert_eq!(finished, ended);
    let t3_c = engine.step_id(t3, "c").await?;
    let dispatched: Vec<Uuid> = effects.dispatch.iter().map(|m| m.step_id).collect();
    assert_eq!(dispatched, vec![t3_c], "only t3's `c` is ready");

    for (step, state) in [
        (t1_lo, StepState::Completed),
        (t1_hi, StepState::Failed),
        (t2_lo, StepState::Failed),
        (t2_hi, StepState::Cancelled),
        (t3_a, StepState::Completed),
        (t3_b, StepState::Completed),
        (t3_c, StepState::Enqueued),
    ] {
        assert_eq!(engine.step_state(step).await?, state, "step {step}");
    }
    // One transition each, none undone: t1's success was written before its failure ended
    // the task (so it was not cancelled), and t3's duplicate recorded nothing.
    for (task, step, to, n) in [
        (t1, t1_lo, "completed", 1),
        (t1, t1_lo, "cancelled", 0),
        (t2, t2_hi, "completed", 0),
        (t2, t2_hi, "cancelled", 1),
        (t3, t3_a, "completed", 1),
        (t3, t3_b, "completed", 1),
    ] {
        assert_eq!(
            engine.transitions(task, Some(step), to).await?,
            n,
            "step {step} into {to}"
        );
    }
    for (task, state) in [
        (t1, TaskState::Error),
        (t2, TaskState::Error),
        (t3, TaskState::Running),
        (t4, TaskState::Complete),
        (t5, TaskState::Complete),
    ] {
        assert_eq!(engine.task_state(task).await?, state, "task {task}");
    }
    for task in [t4, t5] {
        assert_eq!(engine.transitions(task, None, "complete").await?, 1);
    }
    engine.store.pool().close().await;
    env.cleanup().await
}
