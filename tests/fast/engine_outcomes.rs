//! Each function of the result engine (`tasker-orchestration/sql/`) on its own, called as
//! `tasker_apply_results` calls it, against a real PostgreSQL: the judge of a batch and the
//! answer (here); the success of plain steps (alone, as a whole batch, and as a run in a mixed
//! batch) and the success of a decision and of a batchable step (`successes`); a retryable
//! failure and a failure for good (`failures`); a repair's target and its resumption
//! (`repairs`); a large fan-out counted down on tallies (`tallies`). `tests/fast/engine.rs` checks the whole engine against the transition tables.

use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::TaskTemplate;

#[path = "engine_outcomes/failures.rs"]
mod failures;
#[path = "engine_outcomes/repairs.rs"]
mod repairs;
#[path = "engine_outcomes/successes.rs"]
mod successes;
#[path = "engine_outcomes/tallies.rs"]
mod tallies;

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
            .create_task(tasker::new_task(template_id, &loaded, json!({}), None))
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
