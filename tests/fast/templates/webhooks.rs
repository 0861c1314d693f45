//! Webhooks in: a GitHub-signed body starts its task (and its delivery sent again starts
//! nothing new); a Stripe- and a generic-signed body become their events; a bad or stale
//! signature is 401 and stores nothing; the secret Tasker makes is answered once — against a
//! real orchestrator and PostgreSQL.

use serde_json::{Value, json};
use tasker_client::{PutWebhook, TaskQuery, WebhookFormat};
use tasker_orchestration::webhook_sign::sign;

use super::bare_env;

/// Started by GitHub's `push` to `main`.
const ON_PUSH: &str = "namespace: shop_wh
name: deploy
version: '1'
on:
  - event: github.push
    if:
      /data/ref: {const: refs/heads/main}
    context: {commit: /data/after, delivery: /id}
steps:
  - name: build
    handler: nobody_serves_this
";

async fn post(
    o: &tasker::RunningOrchestrator,
    name: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> anyhow::Result<(u16, Value)> {
    let mut req = reqwest::Client::new()
        .post(format!("{}/v1/webhooks/{name}", o.url()))
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    Ok((status, resp.json().await.unwrap_or(Value::Null)))
}

async fn event_count(o: &tasker::RunningOrchestrator) -> anyhow::Result<usize> {
    Ok(o.client
        .events(Some("shop_wh"), None, None, Some(500))
        .await?
        .events
        .len())
}

fn webhook(format: WebhookFormat, secret: Option<&str>) -> PutWebhook {
    PutWebhook {
        namespace: "shop_wh".into(),
        format,
        secret: secret.map(str::to_owned),
        ..PutWebhook::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_signed_push_starts_its_task_and_a_bad_signature_stores_nothing()
-> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(ON_PUSH, Some("deploy.yaml"), None)
        .await?;
    let secret = "a-github-secret-of-some-length";
    let (saved, created) = o
        .client
        .put_webhook("gh", &webhook(WebhookFormat::Github, Some(secret)))
        .await?;
    assert!(created);
    assert_eq!(saved.secret, None, "a secret given is never answered back");

    let body = serde_json::to_vec(&json!({ "ref": "refs/heads/main", "after": "abc123" }))?;
    let mut headers = sign(WebhookFormat::Github, secret, 0, &body);
    headers.push(("x-github-event", "push".into()));
    headers.push(("x-github-delivery", "delivery-1".into()));

    // A body changed after signing, another secret, no signature: 401, nothing stored.
    let tampered = serde_json::to_vec(&json!({ "ref": "refs/heads/main", "after": "evil" }))?;
    let other = sign(WebhookFormat::Github, "not-the-secret-at-all", 0, &body);
    for (what, h, b) in [
        ("a changed body", headers.clone(), tampered.as_slice()),
        (
            "another secret",
            [other, headers[1..].to_vec()].concat(),
            body.as_slice(),
        ),
        ("no signature", headers[1..].to_vec(), body.as_slice()),
    ] {
        let (status, answer) = post(&o, "gh", &h, b).await?;
        assert_eq!(status, 401, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], "bad_signature", "{what}");
    }
    assert_eq!(
        event_count(&o).await?,
        0,
        "a refused request stored an event"
    );

    let (status, event) = post(&o, "gh", &headers, &body).await?;
    assert_eq!(status, 201, "{event}");
    assert_eq!(event["name"], "github.push");
    assert_eq!(event["sender_id"], "delivery-1");
    let task_id: uuid::Uuid = event["started"][0]["task_id"]
        .as_str()
        .expect("a task started")
        .parse()?;
    let task = o.client.task(task_id, None).await?;
    assert_eq!(task.context["commit"], "abc123");

    // GitHub's redelivery of the same delivery: the stored event, nothing new.
    let (status, again) = post(&o, "gh", &headers, &body).await?;
    assert_eq!((status, &again["id"]), (200, &event["id"]));
    let tasks = o
        .client
        .tasks(&TaskQuery {
            namespace: Some("shop_wh".into()),
            ..TaskQuery::default()
        })
        .await?;
    assert_eq!(tasks.tasks.len(), 1);
    let seen = o.client.webhook("gh").await?;
    assert_eq!((seen.received, seen.secret), (2, None));
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_and_generic_signatures_make_events_and_a_stale_one_is_refused() -> anyhow::Result<()>
{
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    let (stripe, _) = o
        .client
        .put_webhook(
            "stripe",
            &webhook(WebhookFormat::Stripe, Some("whsec_0123456789abcdef")),
        )
        .await?;
    assert_eq!(stripe.tolerance_seconds, 300);
    // No secret given: Tasker makes one and answers it this once.
    let mut generic = webhook(WebhookFormat::Generic, None);
    generic.key = Some("/customer".into());
    let (made, _) = o.client.put_webhook("orders", &generic).await?;
    let secret = made.secret.expect("the secret Tasker made");
    assert!(secret.len() >= 32, "{secret}");
    assert_eq!(o.client.webhook("orders").await?.secret, None);
    assert!(
        o.client
            .webhooks()
            .await?
            .iter()
            .all(|w| w.secret.is_none())
    );

    let now = chrono::Utc::now().timestamp();
    let paid = serde_json::to_vec(&json!({ "id": "evt_1", "type": "invoice.paid" }))?;
    let (status, event) = post(
        &o,
        "stripe",
        &sign(WebhookFormat::Stripe, "whsec_0123456789abcdef", now, &paid),
        &paid,
    )
    .await?;
    assert_eq!(status, 201, "{event}");
    assert_eq!(
        (&event["name"], &event["sender_id"]),
        (&json!("stripe.invoice.paid"), &json!("evt_1"))
    );

    let order = serde_json::to_vec(&json!({ "customer": 42, "total": 7 }))?;
    let (status, event) = post(
        &o,
        "orders",
        &sign(WebhookFormat::Generic, &secret, now, &order),
        &order,
    )
    .await?;
    assert_eq!(status, 201, "{event}");
    assert_eq!(
        (&event["name"], &event["key"]),
        (&json!("orders"), &json!("42"))
    );

    // Signed with the right secret ten minutes ago: a replay, refused, nothing stored.
    let before = event_count(&o).await?;
    let old = sign(WebhookFormat::Generic, &secret, now - 600, &order);
    let (status, answer) = post(&o, "orders", &old, &order).await?;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (401, &json!("stale_signature"))
    );
    assert_eq!(event_count(&o).await?, before);

    // An unknown webhook, and one removed: 404.
    o.client.delete_webhook("orders").await?;
    let (status, answer) = post(&o, "orders", &old, &order).await?;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (404, &json!("webhook_not_found"))
    );
    o.stop().await;
    env.cleanup().await
}
