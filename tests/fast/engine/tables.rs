//! Every (state, event) pair of steps and of tasks, driven through the SQL functions, against
//! `tasker_shared`'s transition tables: the state it leaves and the transitions it records.

use serde_json::json;

use tasker::TestEnv;
use tasker_orchestration::store::Store;
use tasker_shared::{StepEvent, StepState, TaskEvent, TaskState, TaskTemplate};

use super::{Engine, SINGLE, failure, success};

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
