//! A batch of plain successes, applied by one statement (`tasker_apply_successes`), against the
//! same scenario down the general path: both must leave exactly the same.

use serde_json::json;
use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::{Outcome, TaskTemplate};

use super::{Engine, ROOTS, SINGLE, failure, result, success};

/// A decision between two branches, a standard step after both (skipped when a branch was not
/// chosen) and a convergence step after both (runs after whichever ran).
const BRANCHES: &str = "namespace: engine_test
name: branches
version: '1'
steps:
  - name: d
    type: decision
    handler: h
    branches: [x, y]
  - name: x
    handler: h
    depends_on: [d]
  - name: y
    handler: h
    depends_on: [d]
  - name: z
    handler: h
    depends_on: [x, y]
  - name: w
    type: convergence
    handler: h
    depends_on: [x, y]
";

/// What a batch of results left behind, by task (in creation order) and step name, so that two
/// runs of the same scenario on different tasks compare equal: each step's state, attempt and
/// transitions, each task's (step name "") state, open steps and transitions, and the batch's
/// answer.
#[derive(Debug, PartialEq)]
struct Outcomes {
    rows: Vec<(usize, String, String, i32, Vec<String>)>,
    accepted: i64,
    ignored: Vec<(usize, String)>,
    /// Results rejected: their step, and the code.
    rejected: Vec<(usize, String, String)>,
    dispatched: Vec<(usize, String)>,
    finished: Vec<(usize, String)>,
}

/// One scenario of plain successes, applied as one batch on one connection: `general` adds a
/// failure of another task's step, which sends the whole batch down the general path. Returns
/// what it left and how many times the one-statement path ran.
async fn plain_successes(engine: &Engine, general: bool) -> anyhow::Result<(Outcomes, i64)> {
    let roots = TaskTemplate::load(ROOTS, "roots.yaml")?;
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    let branches = TaskTemplate::load(BRANCHES, "branches.yaml")?;
    let tasks = vec![
        engine.create(&roots).await?,
        engine.create(&single).await?,
        engine.create(&single).await?,
        engine.create(&branches).await?,
    ];
    let [r, s1, s2, b] = tasks[..] else {
        unreachable!()
    };
    // Before the batch: the decision chose x, so y is skipped and z can no longer run.
    let d = engine.step_id(b, "d").await?;
    engine
        .apply(
            b,
            d,
            Outcome::Success {
                result: json!({"branches": ["x"]}),
            },
        )
        .await?;
    let (a, a2) = (engine.step_id(r, "a").await?, engine.step_id(r, "b").await?);
    let mut stale = result(s2, engine.step_id(s2, "only").await?, success());
    stale.attempt = 2;
    let mut batch = vec![
        result(r, a, success()),
        result(r, a, success()),
        result(r, a2, success()),
        result(s1, engine.step_id(s1, "only").await?, success()),
        result(s2, engine.step_id(s2, "only").await?, success()),
        stale,
        result(b, engine.step_id(b, "x").await?, success()),
    ];
    if general {
        let other = engine.create(&single).await?;
        let only = engine.step_id(other, "only").await?;
        batch.push(result(other, only, failure(false)));
    }
    batch.reverse();

    let mut conn = engine.store.pool().acquire().await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    sqlx::query("SET LOCAL track_functions = 'all'")
        .execute(&mut *tx)
        .await?;
    // Calls this connection counted and has not reported yet, earlier transactions' included.
    let calls =
        "SELECT COALESCE(pg_stat_get_xact_function_calls('tasker_apply_successes'::regproc), 0)";
    let before: i64 = sqlx::query_scalar(calls).fetch_one(&mut *tx).await?;
    let answer: serde_json::Value = sqlx::query_scalar("SELECT tasker_apply_results($1)")
        .bind(serde_json::to_value(&batch)?)
        .fetch_one(&mut *tx)
        .await?;
    let one_statement = sqlx::query_scalar::<_, i64>(calls)
        .fetch_one(&mut *tx)
        .await?
        - before;
    tx.commit().await?;

    let step_names: Vec<(Uuid, Uuid, String)> =
        sqlx::query_as("SELECT id, task_id, name FROM steps WHERE task_id = ANY($1)")
            .bind(&tasks)
            .fetch_all(engine.store.pool())
            .await?;
    let role = |task: Uuid| {
        tasks
            .iter()
            .position(|t| *t == task)
            .expect("a scenario task")
    };
    let name = |id: &str| -> (usize, String) {
        let id: Uuid = id.parse().expect("a step id");
        let (_, task, name) = step_names.iter().find(|(s, ..)| *s == id).expect("a step");
        (role(*task), name.clone())
    };
    let ids = |v: &serde_json::Value| -> Vec<(usize, String)> {
        let mut out: Vec<_> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|id| name(id.as_str().unwrap_or_default()))
            .collect();
        out.sort();
        out
    };
    // Each step (state, attempt, transitions) and each task (name "": state, open steps,
    // transitions).
    let rows: Vec<(Uuid, String, String, i32, Vec<String>)> = sqlx::query_as(
        "SELECT s.task_id, s.name, s.state::text, s.attempt,
                ARRAY(SELECT coalesce(t.from_state, '-') || '>' || t.to_state FROM transitions t
                      WHERE t.step_id = s.id ORDER BY t.id)
         FROM steps s WHERE s.task_id = ANY($1)
         UNION ALL
         SELECT k.id, '', k.state::text, k.open_steps,
                ARRAY(SELECT coalesce(t.from_state, '-') || '>' || t.to_state FROM transitions t
                      WHERE t.task_id = k.id AND t.step_id IS NULL ORDER BY t.id)
         FROM tasks k WHERE k.id = ANY($1)",
    )
    .bind(&tasks)
    .fetch_all(engine.store.pool())
    .await?;
    let mut rows: Vec<_> = rows
        .into_iter()
        .map(|(t, n, st, at, tr)| (role(t), n, st, at, tr))
        .collect();
    rows.sort();
    let mut finished: Vec<(usize, String)> = answer["finished"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let task: Uuid = f["task_id"].as_str()?.parse().ok()?;
            tasks.contains(&task).then(|| {
                (
                    role(task),
                    f["state"].as_str().unwrap_or_default().to_owned(),
                )
            })
        })
        .collect();
    finished.sort();
    let dispatched: Vec<serde_json::Value> = answer["dispatch"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["step_id"].clone())
        .collect();
    let mut rejected: Vec<(usize, String, String)> = answer["rejected"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let at = r["i"].as_u64().expect("a position") as usize - 1;
            let (task, step) = name(&batch[at].step_id.to_string());
            (
                task,
                step,
                r["code"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    rejected.sort();
    let outcomes = Outcomes {
        rows,
        accepted: answer["accepted"].as_i64().unwrap_or(-1) - i64::from(general),
        ignored: ids(&answer["ignored"]),
        rejected,
        dispatched: ids(&serde_json::Value::Array(dispatched)),
        finished,
    };
    Ok((outcomes, one_statement))
}

/// A batch of plain successes (almost every batch) is applied by one statement
/// (tasker_apply_successes), and leaves exactly what the general path leaves: a duplicate
/// ignored, an attempt the step never reached rejected, a join's child counted down by both parents and enqueued once, tasks
/// completed once each, a child that can no longer run skipped (and its task's convergence step
/// enqueued), the same transitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_plain_successes_in_one_statement_matches_the_general_path() -> anyhow::Result<()>
{
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let (one, calls) = plain_successes(&engine, false).await?;
    assert_eq!(
        calls, 1,
        "a batch of plain successes takes the one-statement path"
    );
    let (general, calls) = plain_successes(&engine, true).await?;
    assert_eq!(calls, 0, "a batch with a failure takes the general path");
    assert_eq!(one, general);

    // And what they both left is right.
    let state = |task: usize, step: &str| {
        one.rows
            .iter()
            .find(|s| s.0 == task && s.1 == step)
            .map(|s| s.2.clone())
    };
    assert_eq!(one.accepted, 5);
    assert_eq!(one.ignored, vec![(0, "a".to_owned())], "the duplicate");
    assert_eq!(
        one.rejected,
        vec![(2, "only".to_owned(), "result_mismatch".to_owned())],
        "the attempt the step never reached"
    );
    assert_eq!(
        one.dispatched,
        vec![(0, "c".to_owned()), (3, "w".to_owned())]
    );
    assert_eq!(
        one.finished,
        vec![(1, "complete".to_owned()), (2, "complete".to_owned())]
    );
    for (task, step, expected) in [
        (0, "a", "completed"),
        (0, "b", "completed"),
        (0, "c", "enqueued"),
        (1, "only", "completed"),
        (2, "only", "completed"),
        (3, "x", "completed"),
        (3, "y", "skipped"),
        (3, "z", "skipped"),
        (3, "w", "enqueued"),
    ] {
        assert_eq!(
            state(task, step).as_deref(),
            Some(expected),
            "{task}/{step}"
        );
    }
    let transitions = |task: usize, step: &str| {
        one.rows
            .iter()
            .find(|s| s.0 == task && s.1 == step)
            .map(|s| s.4.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        transitions(0, "a"),
        vec!["-", "pending>enqueued", "enqueued>completed"][1..]
    );
    assert_eq!(transitions(0, "c"), vec!["pending>enqueued"]);
    let (running, complete) = (
        vec!["->running".to_owned()],
        vec!["->running".to_owned(), "running>complete".to_owned()],
    );
    let tasks: Vec<_> = one
        .rows
        .iter()
        .filter(|r| r.1.is_empty())
        .cloned()
        .collect();
    assert_eq!(
        tasks,
        vec![
            (0, String::new(), "running".to_owned(), 1, running.clone()),
            (1, String::new(), "complete".to_owned(), 0, complete.clone()),
            (2, String::new(), "complete".to_owned(), 0, complete),
            (3, String::new(), "running".to_owned(), 1, running),
        ],
        "tasks: state, open steps, transitions"
    );
    engine.store.pool().close().await;
    env.cleanup().await
}
