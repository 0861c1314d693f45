//! Each function of the result engine (`tasker-orchestration/sql/`) on its own, called as
//! `tasker_apply_results` calls it, against a real PostgreSQL: the judge of a batch, the
//! success of plain steps (alone, as a whole batch, and as a run in a mixed batch), the success
//! of a decision and of a batchable step, a retryable failure, a failure for good, and the
//! answer. `tests/fast/engine.rs` checks the whole engine against the transition tables.

use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::{NewTask, Store};
use tasker_shared::TaskTemplate;

/// `a` → `b`; `c` needs `a` too (a join of one), `b` retries.
const CHAIN: &str = "namespace: outcomes
name: chain
version: '1'
steps:
  - name: a
    handler: h
  - name: b
    handler: h
    depends_on: [a]
    retry: { max_attempts: 3, backoff: exponential, base_ms: 60000, max_ms: 60000 }
  - name: c
    handler: h
    depends_on: [a]
";

const BRANCHES: &str = "namespace: outcomes
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
  - name: w
    type: convergence
    handler: h
    depends_on: [x, y]
";

const BATCHES: &str = "namespace: outcomes
name: batches
version: '1'
steps:
  - name: split
    type: batchable
    handler: h
  - name: work
    type: batch_worker
    handler: h
    depends_on: [split]
    on_failure: continue
  - name: sum
    type: convergence
    handler: h
    depends_on: [work]
";

struct World {
    env: TestEnv,
    store: Store,
}

impl World {
    async fn new() -> anyhow::Result<World> {
        let env = TestEnv::new().await?;
        let store = Store::connect(&env.config.database_url, 4).await?;
        Ok(World { env, store })
    }

    async fn task(&self, yaml: &str) -> anyhow::Result<Uuid> {
        let loaded = TaskTemplate::load(yaml, "outcomes.yaml")?;
        let template_id = self
            .store
            .register_template(&loaded.template, "test")
            .await?
            .view()
            .id;
        Ok(self
            .store
            .create_task(NewTask {
                template_id,
                template: &loaded,
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
            .await?
            .task_id)
    }

    async fn step(&self, task: Uuid, name: &str) -> anyhow::Result<(Uuid, String, i32)> {
        Ok(sqlx::query_as(
            "SELECT id, state::text, attempt FROM steps WHERE task_id = $1 AND name = $2",
        )
        .bind(task)
        .bind(name)
        .fetch_one(self.store.pool())
        .await?)
    }

    async fn state(&self, task: Uuid, name: &str) -> anyhow::Result<String> {
        Ok(self.step(task, name).await?.1)
    }

    async fn conn(&self) -> anyhow::Result<PgConnection> {
        Ok(PgConnection::connect(&self.env.config.database_url).await?)
    }

    async fn done(self) -> anyhow::Result<()> {
        self.store.pool().close().await;
        self.env.cleanup().await
    }
}

/// The first attempt's result, as a worker writes it.
fn result(task: Uuid, step: Uuid, outcome: Value) -> Value {
    json!({"task_id": task, "step_id": step, "attempt": 1, "outcome": outcome,
           "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:01Z",
           "worker": "outcomes-test"})
}

fn success(value: Value) -> Value {
    json!({"status": "success", "result": value})
}

fn failure(retryable: bool) -> Value {
    json!({"status": "failure", "retryable": retryable,
           "error": {"kind": "test", "message": "failed on purpose"}})
}

/// Calls `sql` (a function of the step locked as the driver locks it: `$1`, the step's id, and
/// `$2`, its result) in a transaction it commits; returns the function's record as JSON.
async fn call(world: &World, sql: &str, step: Uuid, r: &Value) -> anyhow::Result<Value> {
    let mut conn = world.conn().await?;
    let mut tx = conn.begin().await?;
    let answer: Value = sqlx::query_scalar(&format!(
        "SELECT to_jsonb(f) FROM (SELECT * FROM steps WHERE id = $1 FOR UPDATE) st,
         LATERAL {sql} f"
    ))
    .bind(step)
    .bind(r)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(answer)
}

fn ids(v: &Value) -> Vec<Uuid> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str()?.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_accepts_ignores_and_rejects_and_tells_each_results_kind() -> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let branches = w.task(BRANCHES).await?;
    let (a, ..) = w.step(chain, "a").await?;
    let (d, ..) = w.step(branches, "d").await?;
    let batch = json!([
        result(chain, a, success(json!(1))),
        result(chain, a, success(json!(1))),
        result(branches, d, success(json!({"branches": ["x"]}))),
        result(branches, a, failure(true)),
        result(chain, Uuid::now_v7(), success(json!(1))),
    ]);
    let mut conn = w.conn().await?;
    let judged: Value = sqlx::query_scalar(
        "SELECT to_jsonb(j) FROM tasker_judge_results($1, ARRAY[NULL, NULL, '^(?:nope)$', NULL, NULL]) j",
    )
    .bind(&batch)
    .fetch_one(&mut conn)
    .await?;
    assert_eq!(ids(&judged["ids"]), vec![a], "{judged}");
    assert_eq!(judged["kinds"], json!(["success"]));
    assert_eq!(ids(&judged["ignored"]), vec![a], "the copy");
    let codes = tasker::rejected_codes(&judged);
    assert_eq!(
        codes,
        vec![
            (3, "result_not_permitted"),
            (4, "result_mismatch"),
            (5, "result_mismatch")
        ]
    );
    assert_eq!(judged["plain"], true);
    // Nothing was written: judging only locks.
    assert_eq!(w.state(chain, "a").await?, "enqueued");
    w.done().await
}

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
    // A batchable step: one instance per batch, ready to run.
    let batches = w.task(BATCHES).await?;
    let (split, ..) = w.step(batches, "split").await?;
    let split_up = call(
        &w,
        "tasker_apply_shaped(st, $2)",
        split,
        &result(batches, split, success(json!({"batches": [1, 2]}))),
    )
    .await?;
    assert_eq!(ids(&split_up["ready"]).len(), 2, "{split_up}");
    assert_eq!(w.step(batches, "work#1").await?.1, "pending");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_sends_what_is_enqueued_and_enqueues_what_is_ready() -> anyhow::Result<()> {
    let w = World::new().await?;
    let chain = w.task(CHAIN).await?;
    let (a, ..) = w.step(chain, "a").await?;
    let (b, ..) = w.step(chain, "b").await?;
    let mut conn = w.conn().await?;
    // `a` is enqueued already; `b` is pending and ready.
    let answer: Value = sqlx::query_scalar(
        "SELECT tasker_applied(2, '{}', '[]', ARRAY[$1::uuid], ARRAY[$2::uuid], '[]', '[]')",
    )
    .bind(a)
    .bind(b)
    .fetch_one(&mut conn)
    .await?;
    let sent: Vec<Uuid> = answer["dispatch"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["step_id"].as_str()?.parse().ok())
        .collect();
    assert_eq!(sent, vec![a, b], "{answer}");
    assert_eq!(answer["accepted"], 2);
    assert_eq!(w.step(chain, "b").await?, (b, "enqueued".into(), 1));
    w.done().await
}

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
