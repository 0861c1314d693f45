//! The engine in PostgreSQL (`tasker-orchestration/sql/`) against its specification in Rust:
//! every (state, event) pair of steps and tasks is driven through the SQL functions and the
//! outcome compared with `tasker_shared`'s transition tables; the vocabulary the schema accepts
//! (CHECK constraints of its domains) is compared with the Rust vocabulary.

use std::collections::BTreeSet;

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::{NewTask, Store};
use tasker_shared::template::Loaded;
use tasker_shared::{
    Backoff, FailurePolicy, Outcome, StepError, StepEvent, StepResult, StepState, StepType,
    TaskEvent, TaskState, TaskTemplate,
};

const PAIR: &str = "namespace: engine_test
name: pair
version: '1'
steps:
  - name: a
    handler: h
  - name: b
    handler: h
    depends_on: [a]
    retry: { max_attempts: 3, backoff: exponential, base_ms: 60000, max_ms: 60000 }
";

const SINGLE: &str = "namespace: engine_test
name: single
version: '1'
steps:
  - name: only
    handler: h
";

/// Two roots and a step that needs both.
const ROOTS: &str = "namespace: engine_test
name: roots
version: '1'
steps:
  - name: a
    handler: h
  - name: b
    handler: h
  - name: c
    handler: h
    depends_on: [a, b]
";

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

struct Engine {
    store: Store,
}

impl Engine {
    async fn create(&self, loaded: &Loaded) -> anyhow::Result<Uuid> {
        let template_id = self
            .store
            .register_template(&loaded.template, "test")
            .await?
            .view()
            .id;
        let created = self
            .store
            .create_task(NewTask {
                template_id,
                template: loaded,
                context: json!({}),
                idempotency_key: None,
                run_at: None,
                children: Vec::new(),
                parent: None,
                priority: Default::default(),
                token_id: None,
                controls: Default::default(),
                deadline: None,
            })
            .await?;
        Ok(created.task_id)
    }

    async fn step_id(&self, task: Uuid, name: &str) -> anyhow::Result<Uuid> {
        Ok(
            sqlx::query_scalar("SELECT id FROM steps WHERE task_id = $1 AND name = $2")
                .bind(task)
                .bind(name)
                .fetch_one(self.store.pool())
                .await?,
        )
    }

    async fn step_state(&self, step: Uuid) -> anyhow::Result<StepState> {
        let s: String = sqlx::query_scalar("SELECT state FROM steps WHERE id = $1")
            .bind(step)
            .fetch_one(self.store.pool())
            .await?;
        StepState::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown step state {s}"))
    }

    async fn task_state(&self, task: Uuid) -> anyhow::Result<TaskState> {
        let s: String = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
            .bind(task)
            .fetch_one(self.store.pool())
            .await?;
        TaskState::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown task state {s}"))
    }

    /// Transitions recorded for a step (or, with `None`, for the task itself) into `to`.
    async fn transitions(&self, task: Uuid, step: Option<Uuid>, to: &str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM transitions
             WHERE task_id = $1 AND step_id IS NOT DISTINCT FROM $2 AND to_state = $3",
        )
        .bind(task)
        .bind(step)
        .bind(to)
        .fetch_one(self.store.pool())
        .await?)
    }

    async fn apply(&self, task: Uuid, step: Uuid, outcome: Outcome) -> anyhow::Result<()> {
        self.store
            .apply_results(&[result(task, step, outcome)])
            .await?;
        Ok(())
    }

    /// The timer's start of scheduled tasks whose time came (`tasker_start_tasks`).
    async fn start_due(&self) -> anyhow::Result<()> {
        self.store.start_tasks(100).await?;
        Ok(())
    }

    async fn cancel(&self, task: Uuid) -> anyhow::Result<()> {
        self.exec(
            "SELECT tasker_end_task($1, 'cancelled', NULL, 'engine test')",
            task,
        )
        .await
    }

    /// A repair by hand (`tasker_repair`) of the task, as if it had ended in error: retry
    /// (no resolution) or resolve `step` with a result. A refused repair changes nothing.
    async fn repair(
        &self,
        task: Uuid,
        step: Option<Uuid>,
        resolution: Option<serde_json::Value>,
    ) -> anyhow::Result<()> {
        sqlx::query("SELECT tasker_repair($1, $2, $3, 'engine-test', NULL)")
            .bind(task)
            .bind(step)
            .bind(resolution)
            .execute(self.store.pool())
            .await?;
        Ok(())
    }

    async fn exec(&self, sql: &str, id: Uuid) -> anyhow::Result<()> {
        sqlx::query(sql).bind(id).execute(self.store.pool()).await?;
        Ok(())
    }
}

/// The first attempt's result.
fn result(task: Uuid, step: Uuid, outcome: Outcome) -> StepResult {
    let now = Utc::now();
    StepResult {
        task_id: task,
        step_id: step,
        attempt: 1,
        outcome,
        started_at: now,
        finished_at: now,
        worker: "engine-test".into(),
        traceparent: None,
    }
}

fn failure(retryable: bool) -> Outcome {
    Outcome::failure(StepError::new("test", "failed on purpose"), retryable)
}

fn success() -> Outcome {
    Outcome::Success {
        result: json!({"ok": true}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_state_and_event_pair_matches_the_table() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let pair = TaskTemplate::load(PAIR, "pair.yaml")?;
    let mut checked = 0;
    for from in StepState::ALL {
        for event in StepEvent::ALL {
            let task = engine.create(&pair).await?;
            let b = engine.step_id(task, "b").await?;
            // Put `b` (a child of the root `a`, three attempts) in the state under test.
            sqlx::query(
                "UPDATE steps SET state = $2,
                        attempt = CASE WHEN $2 = 'pending' THEN 0 ELSE 1 END,
                        dispatched_at = clock_timestamp(),
                        next_attempt_at = CASE WHEN $2 = 'waiting_retry'
                                               THEN clock_timestamp() + interval '1 hour' END
                 WHERE id = $1",
            )
            .bind(b)
            .bind(from.as_str())
            .execute(engine.store.pool())
            .await?;
            if matches!(event, StepEvent::Repair | StepEvent::Resolve) {
                // Only a task in error is repaired.
                engine
                    .exec(
                        "UPDATE tasks SET state = 'error', completed_at = clock_timestamp() WHERE id = $1",
                        task,
                    )
                    .await?;
            }
            match event {
                StepEvent::Dispatch => engine.exec("SELECT tasker_dispatch(ARRAY[$1])", b).await?,
                StepEvent::Throttle => {
                    // A limit whose only slot is taken.
                    engine
                        .exec(
                            "WITH k AS (INSERT INTO concurrency_slots (key, lim, in_use)
                                        VALUES ('engine:' || $1, 1, 1))
                             UPDATE steps SET limits = jsonb_build_object('concurrency',
                                 jsonb_build_object('key', 'engine:' || $1, 'limit', 1))
                             WHERE id = $1",
                            b,
                        )
                        .await?;
                    engine.exec("SELECT tasker_dispatch(ARRAY[$1])", b).await?
                }
                StepEvent::Succeed => engine.apply(task, b, success()).await?,
                StepEvent::FailRetryable => engine.apply(task, b, failure(true)).await?,
                StepEvent::FailPermanent => engine.apply(task, b, failure(false)).await?,
                StepEvent::Skip => engine.exec("SELECT tasker_skip(ARRAY[$1])", b).await?,
                StepEvent::Cancel => engine.cancel(task).await?,
                StepEvent::Repair => engine.repair(task, None, None).await?,
                StepEvent::Resolve => {
                    engine
                        .repair(task, Some(b), Some(json!({"ok": true})))
                        .await?
                }
            }
            let want = from.on(event).unwrap_or(from);
            // A repair dispatches what it made runnable: a retried step's next attempt at once.
            let now = match (event, from.on(event)) {
                (StepEvent::Repair, Some(StepState::WaitingRetry)) => StepState::Enqueued,
                _ => want,
            };
            let got = engine.step_state(b).await?;
            assert_eq!(got, now, "step {from} + {event:?}");
            let recorded = engine.transitions(task, Some(b), want.as_str()).await?;
            let changed = from.on(event).is_some();
            assert_eq!(
                recorded,
                i64::from(changed),
                "step {from} + {event:?}: transitions recorded into {want}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, StepState::ALL.len() * StepEvent::ALL.len());
    engine.store.pool().close().await;
    env.cleanup().await
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_state_and_event_pair_matches_the_table() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let engine = Engine {
        store: Store::connect(&env.config.database_url, 4).await?,
    };
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    for from in TaskState::ALL {
        for event in TaskEvent::ALL {
            let task = engine.create(&single).await?;
            let only = engine.step_id(task, "only").await?;
            sqlx::query(
                "UPDATE tasks SET state = $2, run_at = clock_timestamp(),
                        completed_at = CASE WHEN $2 NOT IN ('running', 'scheduled')
                                            THEN clock_timestamp() END
                 WHERE id = $1",
            )
            .bind(task)
            .bind(from.as_str())
            .execute(engine.store.pool())
            .await?;
            match event {
                TaskEvent::Start => engine.start_due().await?,
                TaskEvent::Finish => engine.apply(task, only, success()).await?,
                TaskEvent::Fail => engine.apply(task, only, failure(false)).await?,
                TaskEvent::Cancel => engine.cancel(task).await?,
                TaskEvent::Repair => engine.repair(task, None, None).await?,
            }
            let want = from.on(event).unwrap_or(from);
            assert_eq!(
                engine.task_state(task).await?,
                want,
                "task {from} + {event:?}"
            );
            let recorded = engine.transitions(task, None, want.as_str()).await?;
            let expected = match (from.on(event), from) {
                // Back to running: once at creation, once now.
                (Some(TaskState::Running), _) => 2,
                (Some(_), _) => 1,
                // `created` is recorded into running at creation.
                (None, TaskState::Running) => 1,
                (None, _) => 0,
            };
            assert_eq!(
                recorded, expected,
                "task {from} + {event:?}: transitions into {want}"
            );
        }
    }
    engine.store.pool().close().await;
    env.cleanup().await
}

/// The quoted names in a CHECK constraint's definition (the vocabulary's are on domains,
/// migration 0012).
async fn allowed(store: &Store, constraint: &str) -> anyhow::Result<BTreeSet<String>> {
    let def: String = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1",
    )
    .bind(constraint)
    .fetch_one(store.pool())
    .await?;
    Ok(def
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect())
}

fn names<T>(all: &[T], name: impl Fn(&T) -> &'static str) -> BTreeSet<String> {
    all.iter().map(|v| name(v).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_allows_exactly_the_rust_vocabulary() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let mut every_state = names(&TaskState::ALL, |s| s.as_str());
    every_state.extend(names(&StepState::ALL, |s| s.as_str()));
    let expected = [
        (
            "tasker_task_state_names",
            names(&TaskState::ALL, |s| s.as_str()),
        ),
        (
            "tasker_step_state_names",
            names(&StepState::ALL, |s| s.as_str()),
        ),
        (
            "tasker_step_type_names",
            names(&StepType::ALL, |s| s.as_str()),
        ),
        ("tasker_backoff_names", names(&Backoff::ALL, |s| s.as_str())),
        (
            "tasker_failure_policy_names",
            names(&FailurePolicy::ALL, |s| s.as_str()),
        ),
        ("tasker_state_names", every_state),
    ];
    for (constraint, rust) in expected {
        assert_eq!(allowed(&store, constraint).await?, rust, "{constraint}");
    }

    // And the database enforces it: a name outside the vocabulary is refused.
    let single = TaskTemplate::load(SINGLE, "single.yaml")?;
    let engine = Engine { store };
    let task = engine.create(&single).await?;
    for refused in [
        "UPDATE tasks SET state = 'done' WHERE id = $1",
        "UPDATE steps SET state = 'done' WHERE task_id = $1",
        "UPDATE steps SET step_type = 'odd' WHERE task_id = $1",
        "INSERT INTO transitions (task_id, to_state, reason) VALUES ($1, 'done', 'test')",
    ] {
        let err = sqlx::query(refused)
            .bind(task)
            .execute(engine.store.pool())
            .await
            .expect_err(refused);
        let code = err.as_database_error().and_then(|e| e.code());
        assert_eq!(code.as_deref(), Some("23514"), "{refused}: {err}");
    }
    engine.store.pool().close().await;
    env.cleanup().await
}
