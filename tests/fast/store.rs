//! Storage functions checked against their Rust reference.

use std::time::Duration;

use serde_json::json;

use tasker::{TestEnv, repo_root, templates};
use tasker_orchestration::store::{NewTask, Store};
use tasker_shared::{Backoff, RetryPolicy, StepType};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_retry_delay_matches_the_rust_policy() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    for backoff in [Backoff::None, Backoff::Linear, Backoff::Exponential] {
        for (base_ms, max_ms) in [(0, 0), (20, 200), (100, 10_000), (1_000, u32::MAX as u64)] {
            for attempt in [1u32, 2, 3, 7, 40, 63, 64, 200] {
                let policy = RetryPolicy {
                    max_attempts: 300,
                    backoff,
                    base_ms,
                    max_ms,
                };
                let sql: i64 = sqlx::query_scalar("SELECT tasker_retry_delay_ms($1, $2, $3, $4)")
                    .bind(backoff.as_str())
                    .bind(base_ms as i64)
                    .bind(max_ms as i64)
                    .bind(attempt as i32)
                    .fetch_one(store.pool())
                    .await?;
                assert_eq!(
                    sql as u128,
                    policy.delay_after(attempt).as_millis(),
                    "{backoff:?} base {base_ms} max {max_ms} attempt {attempt}"
                );
            }
        }
    }
    store.pool().close().await;
    env.cleanup().await
}

/// A handler test (`tasker_worker::testing`) judges a decision's or a batchable step's result
/// by the Rust reference of the rule the engine applies in SQL: the two must agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_result_problem_matches_the_rust_rule() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let branches = vec!["small".to_owned(), "large".to_owned()];
    let results = [
        json!({"branches": ["small"]}),
        json!({"branches": ["small", "large"]}),
        json!({"branches": []}),
        json!({"branches": ["medium"]}),
        json!({"branches": "small"}),
        json!({"branches": [1]}),
        json!({"branches": null}),
        json!({"batches": []}),
        json!({"batches": [{"a": 1}]}),
        json!({"batches": {}}),
        json!({}),
        json!([1, 2]),
        json!("text"),
        json!(null),
    ];
    for step_type in [StepType::Standard, StepType::Decision, StepType::Batchable] {
        for result in &results {
            let sql: Option<String> =
                sqlx::query_scalar("SELECT tasker_result_problem($1, $2, $3)->>'kind'")
                    .bind(step_type.as_str())
                    .bind(json!(branches))
                    .bind(result)
                    .fetch_one(store.pool())
                    .await?;
            let rust = tasker_shared::result_shape::problem(step_type, &branches, result);
            assert_eq!(
                sql,
                rust.map(|e| e.kind),
                "{step_type:?} returning {result}"
            );
        }
    }
    store.pool().close().await;
    env.cleanup().await
}

/// An engine function in the database whose parameters or result differ from this build's
/// cannot be replaced in place: dropping it would pull it from under every orchestrator running
/// (`cache lookup failed for function`), so a start refuses, naming it, and drops nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_with_another_signature_is_refused_at_start_not_dropped() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    // What another release might have left: other parameter names, another return type.
    sqlx::raw_sql(
        "DROP FUNCTION tasker_runnable(text, int, int);
         CREATE FUNCTION tasker_runnable(kind text, skipped int, parents int) RETURNS int
         LANGUAGE sql IMMUTABLE AS $$ SELECT 7 $$;
         DELETE FROM tasker_engine;",
    )
    .execute(store.pool())
    .await?;
    store.pool().close().await;
    let refused = Store::connect(&env.config.database_url, 2)
        .await
        .expect_err("an incompatible function");
    assert!(
        matches!(
            refused,
            tasker_orchestration::store::Error::IncompatibleFunction {
                name: "tasker_runnable"
            }
        ),
        "{refused}"
    );
    let admin = sqlx::PgPool::connect(&env.config.database_url).await?;
    let left: i32 = sqlx::query_scalar("SELECT tasker_runnable('convergence', 1, 2)")
        .fetch_one(&admin)
        .await?;
    assert_eq!(left, 7, "the function in the database was replaced");
    admin.close().await;
    env.cleanup().await
}

/// A restart of the same build applies nothing (no function is replaced under orchestrators
/// running); a changed function is replaced in place, as the same function (its oid), and an
/// older release never replaces a newer release's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_sql_is_applied_once_per_change_and_never_downgraded() -> anyhow::Result<()> {
    use tasker_orchestration::store::{Applied, apply_engine, engine};
    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let oid = || async {
        let oid: i64 = sqlx::query_scalar("SELECT 'tasker_apply_run'::regproc::oid::bigint")
            .fetch_one(store.pool())
            .await?;
        anyhow::Ok(oid)
    };
    let before = oid().await?;
    let release = env!("CARGO_PKG_VERSION");
    assert_eq!(
        apply_engine(store.pool(), &engine(), release).await?,
        Applied::Unchanged
    );
    // A newer build whose tasker_apply_run changed.
    let mut newer = engine();
    let run = newer
        .iter_mut()
        .find(|(name, _)| *name == "tasker_apply_run")
        .expect("tasker_apply_run");
    run.1 = run.1.replacen("BEGIN", "BEGIN\n    -- a newer body", 1);
    assert_eq!(
        apply_engine(store.pool(), &newer, "999.0.0").await?,
        Applied::Applied
    );
    assert_eq!(oid().await?, before, "replaced as another function");
    let body: String = sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE oid = $1::oid")
        .bind(before)
        .fetch_one(store.pool())
        .await?;
    assert!(body.contains("a newer body"));
    // This release's start leaves the newer release's functions as they are.
    store.pool().close().await;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let body: String = sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE oid = $1::oid")
        .bind(before)
        .fetch_one(store.pool())
        .await?;
    assert!(
        body.contains("a newer body"),
        "downgraded by an older release"
    );
    store.pool().close().await;
    env.cleanup().await
}

/// A root wait, a root child step and a root step for a worker.
const HELD: &str = "namespace: rust_examples
name: held
version: '1'
steps:
  - name: nap
    wait: {sleep: 1h}
  - name: kid
    child: {template: family_grandchild}
  - name: work
    handler: held_work
";

/// The steps the orchestrator holds are sorted out in the transaction that dispatches them
/// (`tasker_hold`): when the creation commits, the wait step's wait has begun and the child
/// step comes back as a child to start; neither is ever a message for a worker's queue.
/// Starting the child then holds its step too (`tasker_held`: in flight, with a wake time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_steps_are_sorted_out_in_the_transaction_that_dispatches_them() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        templates("rust"),
        repo_root().join("tests/fixtures/task_templates/composition"),
    ];
    let o = env.orchestrator().await?;
    o.client
        .register_template(HELD, Some("held.yaml"), None)
        .await?;
    let shared = &o.shared;
    let entry = shared
        .catalog
        .get("rust_examples", "held", None)
        .await?
        .expect("held");
    let created = shared
        .store
        .create_task(NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            // What the child's template requires (its context is its parent's).
            context: json!({"value": 5, "sleep_ms": 0}),
            idempotency_key: None,
            run_at: None,
            children: shared.catalog.pin_children(&entry.loaded).await?,
            parent: None,
            priority: Default::default(),
            token_id: None,
            controls: Default::default(),
            deadline: None,
        })
        .await?;
    let task = created.task_id;
    let e = &created.effects;
    let sent: Vec<&str> = e.dispatch.iter().map(|m| m.step_name.as_str()).collect();
    assert_eq!(sent, ["work"], "only the worker's step is a message");
    assert!(e.deferred.is_empty());
    assert_eq!(e.waits.len(), 1, "{:?}", e.waits);
    assert!(
        e.waits[0] > Duration::from_secs(3500),
        "the nap wakes in an hour: {:?}",
        e.waits[0]
    );
    let rows = |db: sqlx::PgPool| async move {
        let rows: Vec<(String, bool, bool)> = sqlx::query_as(
            "SELECT name, tasker_held(s), tasker_sent(s) FROM steps s
             WHERE task_id = $1 ORDER BY name",
        )
        .bind(task)
        .fetch_all(&db)
        .await?;
        anyhow::Ok(rows)
    };
    let db = shared.store.pool().clone();
    let own = |name: &str, held: bool| (name.to_owned(), held, !held);
    assert_eq!(
        rows(db.clone()).await?,
        [own("kid", false), own("nap", true), own("work", false)],
        "the wait began with the commit; the child step waits for its start"
    );
    let kid: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM steps WHERE task_id = $1 AND name = 'kid'")
            .bind(task)
            .fetch_one(&db)
            .await?;
    assert_eq!(
        e.children,
        [tasker_orchestration::effects::ChildStep {
            step_id: kid,
            attempt: 1
        }]
    );
    tasker_orchestration::executor::execute(shared, created.effects).await;
    assert_eq!(
        rows(db.clone()).await?,
        [own("kid", true), own("nap", true), own("work", false)],
        "the child started: its step is held until the child ends"
    );
    o.stop().await;
    env.cleanup().await
}

/// Recording how a notice's delivery ended takes its rule's lock before the notice's, as the
/// removal of a rule (which removes its notices) does: a rule removed while one of its notices'
/// outcome is being recorded is removed, and the record waits, then finds nothing to record.
/// (Notice first, rule second deadlocked with the removal: `500` to a user removing a rule
/// whose sink was failing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_alert_rule_while_its_notice_is_recorded_does_not_deadlock()
-> anyhow::Result<()> {
    use tasker_orchestration::store::Outgoing;
    use tasker_shared::api::AlertSink;

    let env = TestEnv::new().await?;
    let store = Store::connect(&env.config.database_url, 4).await?;
    sqlx::query(
        "INSERT INTO alert_rules (name, namespace, condition, sink, suppress_ms)
         VALUES ('gone', 'shop', '{\"kind\": \"dead_letters\"}',
                 '{\"kind\": \"slack\", \"url\": \"http://127.0.0.1:9/\"}', 0)",
    )
    .execute(store.pool())
    .await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO alert_notices (rule, payload, attempts) VALUES ('gone', '{}', 1) RETURNING id",
    )
    .fetch_one(store.pool())
    .await?;
    let notice = Outgoing {
        id,
        rule: "gone".into(),
        payload: json!({}),
        attempts: 1,
        sink: sqlx::types::Json(AlertSink::Slack {
            url: "http://127.0.0.1:9/".into(),
        }),
        secret: None,
    };

    // A removal under way holds the rule; the record of a failed try comes in beside it.
    let mut removal = store.pool().begin().await?;
    sqlx::query("SELECT 1 FROM alert_rules WHERE name = 'gone' FOR UPDATE")
        .execute(&mut *removal)
        .await?;
    let recorder = store.clone();
    let recording = tokio::spawn(async move {
        recorder
            .notice_failed(&notice, "the sink could not be reached", Some(1.0))
            .await
    });
    // Until the record waits for a lock.
    let waiting = async {
        loop {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(store.pool())
            .await?;
            if n > 0 {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), waiting).await??;
    sqlx::query("DELETE FROM alert_rules WHERE name = 'gone'")
        .execute(&mut *removal)
        .await?;
    removal.commit().await?;
    recording.await??;
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM alert_notices WHERE id = $1")
        .bind(id)
        .fetch_one(store.pool())
        .await?;
    assert_eq!(left, 0, "the notice went with its rule");
    env.cleanup().await
}
