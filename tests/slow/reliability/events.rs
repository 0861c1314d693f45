//! Events through a SIGKILL of the orchestrator that takes them: a batch whose transaction the
//! orchestrator was inside when it died leaves nothing, and the same batch sent again (as a
//! client retries after a cut connection) starts one task per event; a batch that committed
//! just before the kill answers its events as existing when sent again and starts nothing more.
//! Every event is matched exactly once.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;

use tasker::TestEnv;
use tasker_client::SendEvent;

use crate::common;

const NAMESPACE: &str = "ev_kill";

/// Started by every `order.created`; its step is served by no worker (the tasks stay running).
const FULFIL: &str = "namespace: ev_kill
name: fulfil
version: '1'
on:
  - event: order.created
    context: {n: /data/n}
steps:
  - name: pack
    handler: nobody_serves_this
";

/// Events per batch.
const N: usize = 300;

/// Events `from..from + N`, each with its sender's id.
fn batch(from: usize) -> Vec<SendEvent> {
    (from..from + N)
        .map(|n| SendEvent {
            namespace: NAMESPACE.into(),
            name: "order.created".into(),
            data: Some(json!({ "n": n })),
            key: None,
            id: Some(format!("order-{n}")),
        })
        .collect()
}

/// (events stored, tasks, distinct tasks the events say they started).
async fn counts(db: &PgPool) -> anyhow::Result<(i64, i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT count(*) FROM events WHERE namespace = $1),
                (SELECT count(*) FROM tasks WHERE namespace = $1),
                (SELECT count(DISTINCT s->>'task_id') FROM events e,
                        jsonb_array_elements(e.started) s
                 WHERE e.namespace = $1)",
    )
    .bind(NAMESPACE)
    .fetch_one(db)
    .await?)
}

/// Waits (polling the database) until `ready` holds, at most 30 s.
async fn until<F, Fut>(what: &str, mut ready: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let wait = async {
        let mut every = tokio::time::interval(Duration::from_millis(10));
        loop {
            every.tick().await;
            if ready().await? {
                return anyhow::Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .map_err(|_| anyhow::anyhow!("{what}: not within 30 s"))?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_sent_through_an_orchestrator_sigkill_each_start_exactly_one_task()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let db = PgPool::connect(&env.config.database_url).await?;
    let mut a = common::start_orchestrator(&env, common::free_port()?).await?;
    a.client
        .register_template(FULFIL, Some("fulfil.yaml"), None)
        .await?;

    // Inside the transaction: the batch's last sender id is held by an uncommitted row of this
    // test, so the batch's insert waits on it; the orchestrator is killed there and its backend
    // ended as PostgreSQL ends a dead client's.
    let mut hold = db.begin().await?;
    sqlx::query(
        "INSERT INTO events (id, namespace, name, sender_id, data)
         VALUES (gen_random_uuid(), $1, 'order.created', $2, '{}')",
    )
    .bind(NAMESPACE)
    .bind(format!("order-{}", N - 1))
    .execute(&mut *hold)
    .await?;
    let client = a.client.clone();
    let sending = tokio::spawn(async move { client.send_events(batch(0)).await });
    let backend = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = backend.clone();
    let db2 = db.clone();
    until("the batch waiting on the held id", move || {
        let (db, seen) = (db2.clone(), seen.clone());
        async move {
            let pid: Option<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND pid <> pg_backend_pid()",
            )
            .fetch_optional(&db)
            .await?;
            *seen.lock().expect("not poisoned") = pid;
            Ok(pid.is_some())
        }
    })
    .await?;
    a.child.kill().await?;
    let pid = backend.lock().expect("not poisoned").take();
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .execute(&db)
        .await?;
    hold.rollback().await?;
    assert!(
        sending.await?.is_err(),
        "the request died with its orchestrator"
    );
    assert_eq!(counts(&db).await?, (0, 0, 0), "nothing of the batch stayed");

    let mut b = common::start_orchestrator(&env, common::free_port()?).await?;
    let sent = b.client.send_events(batch(0)).await?;
    assert_eq!((sent.created, sent.existing, sent.refused), (N, 0, 0));
    let n = N as i64;
    assert_eq!(counts(&db).await?, (n, n, n), "one task per event");

    // Just after the commit: the orchestrator is killed once the second batch's events exist.
    let client = b.client.clone();
    let sending = tokio::spawn(async move { client.send_events(batch(N)).await });
    until("the second batch committed", || {
        let db = db.clone();
        async move { Ok(counts(&db).await?.0 >= 2 * n) }
    })
    .await?;
    b.child.kill().await?;
    let _ = sending.await?;
    let mut c = common::start_orchestrator(&env, common::free_port()?).await?;
    let again = c.client.send_events(batch(N)).await?;
    assert_eq!(
        (again.created, again.existing, again.refused),
        (0, N, 0),
        "sent again, every event is the one stored"
    );
    assert_eq!(
        counts(&db).await?,
        (2 * n, 2 * n, 2 * n),
        "every event matched exactly once"
    );
    c.child.kill().await?;
    db.close().await;
    env.cleanup().await
}
