//! Events start tasks: a template's `on:` trigger with a condition and a context made from the
//! event, an event that matches nothing kept and visible, a repeated sender's id answered and
//! starting nothing, a batch answered item by item, bad events and bad triggers refused by
//! name — against a real orchestrator and PostgreSQL.

use serde_json::json;
use tasker_client::{BatchStatus, Error, SendEvent, TaskQuery};

use super::bare_env;

/// Started by `order.created` when its total is at least 100; its context is made from the
/// event. Its step's handler has no worker here: a started task stays running.
const FULFIL: &str = "namespace: shop_ev
name: fulfil
version: '1'
context_schema:
  type: object
  required: [order]
  properties: {order: {type: integer}}
on:
  - event: order.created
    if:
      /data/total: {minimum: 100}
    context: {order: /data/id, customer: /key, event: /id}
steps:
  - name: pack
    handler: nobody_serves_this
";

fn order(id: i64, total: i64) -> SendEvent {
    SendEvent {
        namespace: "shop_ev".into(),
        name: "order.created".into(),
        data: Some(json!({ "id": id, "total": total })),
        key: Some("customer-7".into()),
        id: None,
    }
}

async fn tasks(o: &tasker::RunningOrchestrator) -> anyhow::Result<usize> {
    let page = o
        .client
        .tasks(&TaskQuery {
            namespace: Some("shop_ev".into()),
            ..TaskQuery::default()
        })
        .await?;
    Ok(page.tasks.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_starts_the_templates_whose_trigger_it_matches() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(FULFIL, Some("fulfil.yaml"), None)
        .await?;

    let (event, created) = o.client.send_event(&order(1, 150)).await?;
    assert!(created);
    assert_eq!(event.started.len(), 1, "{event:?}");
    let task_id = event.started[0].task_id.expect("a task");
    assert_eq!(event.started[0].template, "shop_ev/fulfil@1");
    let task = o.client.task(task_id, None).await?;
    assert_eq!(
        task.context,
        json!({ "order": 1, "customer": "customer-7", "event": event.id.to_string() })
    );

    // Below the condition: kept, visible, nothing started.
    let (small, _) = o.client.send_event(&order(2, 50)).await?;
    assert!(small.started.is_empty(), "{small:?}");
    assert_eq!(o.client.event(small.id).await?.data["total"], 50);
    assert_eq!(tasks(&o).await?, 1);

    // The same sender's id again: the stored event answers, nothing new starts.
    let mut once = order(3, 500);
    once.id = Some("order-3".into());
    let (first, created) = o.client.send_event(&once).await?;
    assert!(created);
    let (again, created) = o.client.send_event(&once).await?;
    assert!(!created);
    assert_eq!(
        (again.id, again.started.clone()),
        (first.id, first.started.clone())
    );
    assert_eq!(tasks(&o).await?, 2);

    // Newest first, by namespace and name.
    let page = o
        .client
        .events(Some("shop_ev"), Some("order.created"), None, None)
        .await?;
    let ids: Vec<_> = page.events.iter().map(|e| e.id).collect();
    assert_eq!(ids, [first.id, small.id, event.id]);
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answers_each_event_and_bad_events_change_nothing() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(FULFIL, Some("fulfil.yaml"), None)
        .await?;
    let mut bad_name = order(1, 150);
    bad_name.name = "order created".into();
    let mut repeated = order(2, 150);
    repeated.id = Some("twice".into());
    let sent = o
        .client
        .send_events(vec![
            order(1, 150),
            bad_name.clone(),
            repeated.clone(),
            repeated,
        ])
        .await?;
    let statuses: Vec<_> = sent.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            BatchStatus::Created,
            BatchStatus::Refused,
            BatchStatus::Created,
            BatchStatus::Existing
        ]
    );
    assert_eq!(
        sent.results[1].error.as_ref().map(|e| e.code.as_str()),
        Some("invalid_event_name")
    );
    assert_eq!(sent.results[2].event_id, sent.results[3].event_id);
    assert_eq!(sent.results[2].task_ids, sent.results[3].task_ids);
    assert_eq!(tasks(&o).await?, 2);

    // One at a time, each bad part is refused by its code and stores nothing.
    let mut not_object = order(4, 150);
    not_object.data = Some(json!([1, 2]));
    let mut long_key = order(5, 150);
    long_key.key = Some("k".repeat(256));
    for (event, code) in [
        (bad_name, "invalid_event_name"),
        (not_object, "invalid_event_data"),
        (long_key, "invalid_event_key"),
    ] {
        match o.client.send_event(&event).await {
            Err(Error::Api {
                status: 400,
                code: c,
                ..
            }) => assert_eq!(c, code),
            other => panic!("{code}: {other:?}"),
        }
    }
    let all = o.client.events(Some("shop_ev"), None, None, None).await?;
    assert_eq!(
        all.events.len(),
        2,
        "only the batch's two events are stored (its repeat is one of them)"
    );

    // A context the trigger makes that the template's schema refuses: the event is kept, the
    // start refused with the schema's problem.
    let mut no_id = order(6, 150);
    no_id.data = Some(json!({ "total": 150 }));
    let (kept, _) = o.client.send_event(&no_id).await?;
    let refused = kept.started[0].refused.as_ref().expect("refused");
    assert_eq!(refused.code, "context_schema_violation", "{refused:?}");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_trigger_is_refused_at_registration_by_its_field() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    for (trigger, field) in [
        ("  - event: 'has space'\n", "on[0].event"),
        (
            "  - event: x\n    if: {/context/a: {}}\n",
            "on[0].if./context/a",
        ),
        (
            "  - event: x\n    if: {/data/a: {type: 7}}\n",
            "on[0].if./data/a",
        ),
    ] {
        let yaml = format!(
            "namespace: shop_ev\nname: bad\nversion: '1'\non:\n{trigger}steps:\n  - name: a\n    handler: h\n"
        );
        let err = o
            .client
            .register_template(&yaml, Some("bad.yaml"), None)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_older_than_retention_events_are_purged() -> anyhow::Result<()> {
    let mut env = bare_env().await?;
    env.config.retention.events = "30d".into();
    let store = tasker_orchestration::store::Store::connect(&env.config.database_url, 2).await?;
    for days in [40, 20] {
        sqlx::query(
            "INSERT INTO events (id, namespace, name, data, received_at)
             VALUES ($1, 'shop_ev', 'old', '{}', now() - make_interval(days => $2))",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(days)
        .execute(store.pool())
        .await?;
    }
    let db = store.pool().clone();
    // The retention loop's first pass comes as the orchestrator starts.
    let o = env.orchestrator().await?;
    o.until(
        std::time::Duration::from_secs(20),
        "the 40-day-old event purged",
        || {
            let db = db.clone();
            async move {
                let old: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM events WHERE received_at < now() - interval '30 days'",
                )
                .fetch_one(&db)
                .await?;
                Ok((old == 0).then_some(()))
            }
        },
    )
    .await?;
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&db)
        .await?;
    assert_eq!(kept, 1, "the 20-day-old event is kept");
    o.stop().await;
    env.cleanup().await
}
