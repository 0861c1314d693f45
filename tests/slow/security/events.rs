//! Events (`POST /v1/events`): a token of one namespace never sends an event to another, never
//! starts through a trigger what it could not start itself (a template of its namespace with a
//! `child:` step into another), never serves another namespace's waiting steps, and never reads
//! another namespace's events.

use serde_json::json;
use tasker_client::{Error, SendEvent};
use tasker_orchestration::store::Scope;

use crate::common::{client, pair, register, tasks_in, token, with_tokens};

/// A template of `sec_a` started by event `order.created`, whose only step starts `sec_b/pair`.
const REACHING: &str = "namespace: sec_a
name: reaching
version: 1.0.0
on:
  - event: order.created
steps:
  - name: steal
    child: {namespace: sec_b, template: pair}
";

fn event(namespace: &str) -> SendEvent {
    SendEvent {
        namespace: namespace.into(),
        name: "order.created".into(),
        data: Some(json!({ "order": 1 })),
        ..SendEvent::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_never_reaches_or_starts_another_namespaces_work() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_b"), REACHING.to_owned()] {
        let (status, code) = register(&o, &root, &yaml).await;
        assert!(status.is_success(), "{status} {code}");
    }
    let writer_a = client(
        &o,
        &token(&o, "writer-a", Scope::Write, Some("sec_a")).await?,
    );
    // Sent to another namespace: refused, nothing stored.
    match writer_a.send_event(&event("sec_b")).await {
        Err(Error::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (403, "forbidden"));
        }
        other => panic!("an event to sec_b: {other:?}"),
    }
    let batch = writer_a
        .send_events(vec![event("sec_b"), event("sec_a")])
        .await?;
    assert_eq!((batch.refused, batch.created), (1, 1), "{batch:?}");
    // Sent to its own namespace, it matches a trigger whose template reaches sec_b: the event
    // is kept, the start refused for the sender's token, no task anywhere.
    let (mine, created) = writer_a.send_event(&event("sec_a")).await?;
    assert!(created);
    assert_eq!(mine.started.len(), 1, "{mine:?}");
    let refused = mine.started[0].refused.as_ref().expect("refused");
    assert_eq!(refused.code, "forbidden", "{refused:?}");
    assert_eq!(
        tasks_in(&o, "sec_a").await? + tasks_in(&o, "sec_b").await?,
        0
    );
    // The root token, which reaches both, starts it: the trigger works, the scope holds.
    let (rooted, _) = client(&o, &root).send_event(&event("sec_a")).await?;
    assert!(rooted.started[0].task_id.is_some(), "{rooted:?}");
    // Reading: another namespace's event is forbidden, and lists hold only one's own.
    let (theirs, _) = client(&o, &root).send_event(&event("sec_b")).await?;
    let reader_a = client(
        &o,
        &token(&o, "reader-a", Scope::Read, Some("sec_a")).await?,
    );
    match reader_a.event(theirs.id).await {
        Err(Error::Api { status, .. }) => assert_eq!(status, 403),
        other => panic!("reading sec_b's event: {other:?}"),
    }
    let page = reader_a.events(None, None, None, None).await?;
    assert!(!page.events.is_empty());
    assert!(
        page.events.iter().all(|e| e.namespace == "sec_a"),
        "{page:?}"
    );
    assert!(
        reader_a
            .events(Some("sec_b"), None, None, None)
            .await
            .is_err()
    );
    // A reader may not send.
    assert!(reader_a.send_event(&event("sec_a")).await.is_err());
    o.stop().await;
    env.cleanup().await
}

/// Waits in `sec_b` for an `order.created` of its order.
const WAITING: &str = "namespace: sec_b
name: waiting
version: 1.0.0
steps:
  - name: settled
    wait: {event: order.created, match: {/data/order: /context/order}, timeout: 1h}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_never_serves_another_namespaces_waiting_step() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    let (status, code) = register(&o, &root, WAITING).await;
    assert!(status.is_success(), "{status} {code}");
    let task = client(&o, &root)
        .create_task(
            &tasker_client::CreateTask::new("sec_b", "waiting").context(json!({ "order": 1 })),
        )
        .await?;
    let waiting = || async {
        let steps = client(&o, &root).steps(task.id).await?;
        anyhow::Ok(steps.iter().any(|s| s.state == "waiting"))
    };
    o.until(
        std::time::Duration::from_secs(30),
        "the wait begins",
        || async { Ok(waiting().await?.then_some(())) },
    )
    .await?;
    // sec_a's writer sends the very event the wait wants, to its own namespace (it may not send
    // to sec_b): stored, and taken by nothing of sec_b's.
    let writer_a = client(
        &o,
        &token(&o, "writer-a", Scope::Write, Some("sec_a")).await?,
    );
    let (sent, _) = writer_a.send_event(&event("sec_a")).await?;
    let consumed: Option<uuid::Uuid> =
        sqlx::query_scalar("SELECT consumed_by FROM events WHERE id = $1")
            .bind(sent.id)
            .fetch_one(o.shared.store.pool())
            .await?;
    assert_eq!(consumed, None, "sec_a's event served sec_b's wait");
    assert!(waiting().await?, "sec_b's step stopped waiting");
    o.stop().await;
    env.cleanup().await
}
