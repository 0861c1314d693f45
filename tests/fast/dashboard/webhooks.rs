//! The webhooks page (`tests/dashboard/webhooks.mjs`): the webhooks by name, each with the URL a
//! sender posts to, its format, the event name its requests become (a link to those events), its
//! pointers, its window and what it received — and never a secret.

use super::*;
use tasker_client::{PutWebhook, WebhookFormat};
use tasker_orchestration::webhook_sign::sign;

const SCRIPT: &str = "webhooks.mjs";

fn webhook(format: WebhookFormat, key: Option<&str>) -> PutWebhook {
    PutWebhook {
        namespace: "dash_wh".into(),
        format,
        secret: None,
        event: None,
        key: key.map(Into::into),
        id: None,
        tolerance: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhooks_page_lists_each_webhook_with_its_url_mapping_and_receipts_in_a_real_browser()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let (orders, _) = o
        .client
        .put_webhook(
            "orders",
            &webhook(WebhookFormat::Generic, Some("/customer")),
        )
        .await?;
    o.client
        .put_webhook("gh", &webhook(WebhookFormat::Github, None))
        .await?;
    // Two signed requests to `orders`: two events of that name.
    let secret = orders
        .secret
        .clone()
        .expect("a secret made for a new webhook");
    for n in 0..2 {
        let body = format!(r#"{{"customer": "c-{n}", "total": 10}}"#);
        let now = chrono::Utc::now().timestamp();
        let mut req = reqwest::Client::new()
            .post(format!("{}/v1/webhooks/orders", o.url()))
            .header("content-type", "application/json")
            .body(body.clone());
        for (k, v) in sign(WebhookFormat::Generic, &secret, now, body.as_bytes()) {
            req = req.header(k, v);
        }
        let status = req.send().await?.status().as_u16();
        assert_eq!(status, 201, "request {n}");
    }

    let report = clean_tour(SCRIPT, &[("TASKER_URL", o.url())]).await?;
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["gh", "orders"], "by name: {report}");
    let (gh, orders_row) = (&rows[0], &rows[1]);
    assert_eq!(
        (
            &orders_row["format"],
            &orders_row["event"],
            &orders_row["key"],
            &orders_row["received"]
        ),
        (
            &json!("generic"),
            &json!("orders"),
            &json!("/customer"),
            &json!("2")
        ),
        "{report}"
    );
    assert!(
        orders_row["url"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/v1/webhooks/orders"),
        "{report}"
    );
    assert_eq!(
        orders_row["eventsHref"], "#/events?namespace=dash_wh&name=orders",
        "{report}"
    );
    assert_eq!(
        (&gh["format"], &gh["event"], &gh["received"], &gh["last"]),
        (
            &json!("github"),
            &json!("github.<X-GitHub-Event>"),
            &json!("0"),
            &json!("—")
        ),
        "{report}"
    );
    assert_eq!(gh["window"], "300s", "{report}");
    // Following the link lists that webhook's events.
    assert_eq!(report["linkedEvents"], 2, "{report}");
    assert!(
        !report["page"]
            .as_str()
            .unwrap_or_default()
            .contains(&secret),
        "no secret on the page: {report}"
    );
    assert_eq!(report["navCurrent"], "page", "{report}");
    assert!(
        report["status"]
            .as_str()
            .unwrap_or_default()
            .starts_with("2 webhooks · 2 requests received"),
        "{report}"
    );
    o.stop().await;
    env.cleanup().await
}
