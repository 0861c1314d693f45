//! The events page (`tests/dashboard/events.mjs`): events newest first with the task each
//! started, a refusal's code or none, paged with "Older", filtered by name in the address; an
//! event's page with its data and what it started; a template's triggers on its page.

use super::*;
use tasker_client::{Event, SendEvent};

/// The browser script, kept next to this test (it imports `tests/dashboard/browser.mjs`).
const SCRIPT: &str = "events.mjs";
const NS: &str = "dash_ev";
const EVENT: &str = "order.created";

/// Started by an `order.created` of 100 or more, its context made of the event, one task per
/// order for an hour (a dedupe window on `/data/id`); its step's handler is served by no worker
/// (the task stays running).
const FULFIL: &str = "\
namespace: dash_ev
name: fulfil
version: 1.0.0
on:
  - event: order.created
    if:
      /data/total: {minimum: 100}
    context: {customer: /key, order_id: /data/id}
    dedupe: {key: /data/id, ttl: 1h}
steps:
  - name: pack
    handler: pack_order
";

/// Matched by the same events, but its schema wants a `sku` the event's data lacks: each match is
/// refused (`context_schema_violation`), recorded on the event.
const NEEDS_SKU: &str = "\
namespace: dash_ev
name: needs_sku
version: 1.0.0
context_schema: {type: object, required: [sku]}
on:
  - event: order.created
    if:
      /data/total: {minimum: 100}
steps:
  - name: pick
    handler: pick_order
";

fn event(name: &str, data: Value, key: Option<&str>) -> SendEvent {
    SendEvent {
        namespace: NS.into(),
        name: name.into(),
        data: Some(data),
        key: key.map(Into::into),
        id: None,
    }
}

/// The two templates, 49 `tick` events no trigger matches, an `order.created` that starts
/// `fulfil` (and is refused by `needs_sku`), the same order again (its `fulfil` start answered
/// by the first's task: deduplicated) and one that matches no trigger: the last two events and
/// every event's id as the API lists them, newest first.
async fn sent_events(
    o: &tasker::RunningOrchestrator,
) -> anyhow::Result<(Event, Event, Vec<String>)> {
    o.client.register_template(FULFIL, None, None).await?;
    o.client.register_template(NEEDS_SKU, None, None).await?;
    // Sent first: the three below and 47 of them are the list's first page, 2 the next.
    let ticks = (0..49)
        .map(|n| event("tick", json!({"n": n}), None))
        .collect();
    let sent = o.client.send_events(ticks).await?;
    assert_eq!(sent.created, 49, "{sent:?}");
    let order = || event(EVENT, json!({"id": 42, "total": 180}), Some("customer-7"));
    let (first, _) = o.client.send_event(&order()).await?;
    let (matched, created) = o.client.send_event(&order()).await?;
    assert!(created, "{matched:?}");
    assert_eq!(matched.started.len(), 2, "{matched:?}");
    let task = |e: &Event| e.started.iter().find_map(|s| s.task_id);
    assert_eq!(task(&matched), task(&first), "{matched:?}");
    let (unmatched, _) = o
        .client
        .send_event(&event(
            EVENT,
            json!({"id": 43, "total": 5}),
            Some("customer-8"),
        ))
        .await?;
    assert!(unmatched.started.is_empty(), "{unmatched:?}");
    let api: Vec<String> = o
        .client
        .events(None, None, None, Some(100))
        .await?
        .events
        .iter()
        .map(|e| e.id.to_string())
        .collect();
    assert_eq!(api.len(), 52);
    assert_eq!(api[..2], [unmatched.id.to_string(), matched.id.to_string()]);
    Ok((matched, unmatched, api))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_page_shows_what_each_event_started_in_a_real_browser() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let (matched, unmatched, api) = sent_events(&o).await?;
    let started = |template: &str| {
        matched
            .started
            .iter()
            .find(|s| s.template == format!("{NS}/{template}@1.0.0"))
            .cloned()
            .unwrap_or_else(|| panic!("{template} matched: {matched:?}"))
    };
    let fulfil = started("fulfil");
    assert!(fulfil.deduplicated, "{fulfil:?}");
    let task = fulfil.task_id.expect("fulfil answered its order's task");
    let refusal = started("needs_sku").refused.expect("needs_sku refused");
    assert_eq!(refusal.code, "context_schema_violation", "{refusal:?}");
    let (matched_id, unmatched_id) = (matched.id.to_string(), unmatched.id.to_string());

    let report = clean_tour(
        SCRIPT,
        &[
            ("TASKER_URL", o.url()),
            ("EVENT_NAME", EVENT.to_owned()),
            ("MATCHED_ID", matched_id.clone()),
            ("UNMATCHED_ID", unmatched_id.clone()),
            ("TEMPLATE", format!("{NS}/fulfil")),
        ],
    )
    .await?;
    let ids = |key: &str| -> Vec<String> {
        report[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    // Newest first, 50 a page, and "Older" shows the rest: every event, as the API orders them.
    let (first, older) = (ids("firstPage"), ids("olderPage"));
    assert_eq!(first.len(), 50, "{report}");
    assert_eq!([first, older].concat(), api, "{report}");
    assert_eq!(report["navCurrent"], "page", "{report}");
    assert_eq!(report["olderLabel"], "Older »", "{report}");
    assert_eq!(report["newestLabel"], "« Newest", "{report}");
    // The matched event's row: its task (a link) and the refusal's code; the other's: none.
    let row = &report["matched"];
    assert_eq!(
        (&row["namespace"], &row["name"], &row["key"]),
        (&json!(NS), &json!(EVENT), &json!("customer-7")),
        "{report}"
    );
    assert_eq!(
        row["taskHrefs"],
        json!([format!("#/tasks/{task}")]),
        "{report}"
    );
    assert_eq!(
        row["refused"],
        json!(["context_schema_violation"]),
        "{report}"
    );
    assert_eq!(row["none"], 0, "{report}");
    let row = &report["unmatched"];
    assert_eq!(
        (&row["key"], &row["started"]),
        (&json!("customer-8"), &json!("none")),
        "{report}"
    );
    assert_eq!(
        (&row["taskHrefs"], &row["refused"]),
        (&json!([]), &json!([])),
        "{report}"
    );
    // Filtered on the name, in the address and across a reload: the three, not the ticks.
    assert_eq!(api[..2], [unmatched_id, matched_id.clone()]);
    let named = api[..3].to_vec();
    assert_eq!(ids("filtered"), named, "{report}");
    assert_eq!(
        report["filteredHash"],
        format!("#/events?name={EVENT}"),
        "{report}"
    );
    assert_eq!(ids("reloaded"), named, "{report}");
    assert_eq!(report["reloadedInput"], EVENT, "{report}");
    // The matched event's page: its data, its task, the refusal with its message.
    assert_eq!(
        report["detailHash"],
        format!("#/events/{matched_id}"),
        "{report}"
    );
    assert_eq!(
        report["detailData"],
        json!({"id": 42, "total": 180}),
        "{report}"
    );
    let detail = report["detailStarted"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let entry = |template: &str| {
        detail
            .iter()
            .find(|s| s["template"] == format!("{NS}/{template}@1.0.0"))
            .cloned()
            .unwrap_or_else(|| panic!("{template} on the event's page: {report}"))
    };
    assert_eq!(detail.len(), 2, "{report}");
    assert_eq!(
        entry("fulfil")["taskHref"],
        format!("#/tasks/{task}"),
        "{report}"
    );
    assert_eq!(
        entry("fulfil")["outcome"],
        "deduplicated: its key’s task",
        "{report}"
    );
    let refused = entry("needs_sku");
    assert_eq!(refused["taskHref"], Value::Null, "{report}");
    assert_eq!(refused["code"], "context_schema_violation", "{report}");
    assert_eq!(refused["message"], refusal.message, "{report}");
    assert!(
        report["unmatchedStarted"]
            .as_str()
            .is_some_and(|t| t.contains("it started nothing")),
        "{report}"
    );
    // The template's trigger, and its link to that event's list.
    let trigger = &report["trigger"];
    assert_eq!(trigger["heading"], "Started by events", "{report}");
    assert_eq!(trigger["event"], EVENT, "{report}");
    assert_eq!(
        trigger["conditions"],
        json!(["/data/total → {\"minimum\":100}"]),
        "{report}"
    );
    assert_eq!(
        trigger["context"], r#"{"customer":"/key","order_id":"/data/id"}"#,
        "{report}"
    );
    assert_eq!(
        trigger["control"], "dedupe one task per /data/id for 1h",
        "{report}"
    );
    let link = format!("#/events?name={EVENT}&namespace={NS}");
    assert_eq!(trigger["href"], link, "{report}");
    assert_eq!(report["fromTemplateHash"], link, "{report}");
    assert_eq!(ids("fromTemplate"), named, "{report}");
    assert_screenshots(&screenshots(), &["ev1-events", "ev2-event", "ev3-template"]);
    o.stop().await;
    env.cleanup().await
}
