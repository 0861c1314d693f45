//! Every mutating route, walked from the OpenAPI document: one audit row per request, with a
//! token, without one (refused) and on the routes that take none; no route changes a row.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{AuditQuery, Client};

use super::{guarded, rows, written};

/// A value for path parameter `name` of `op`, as its schema says: a UUID, a number, a name.
fn param_value(op: &Value, name: &str) -> String {
    let schema = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name && p["in"] == "path")
        .map(|p| p["schema"].clone())
        .unwrap_or_default();
    if schema["format"] == "uuid" {
        uuid::Uuid::now_v7().to_string()
    } else if schema["type"] == "integer" {
        "987654321".into()
    } else if name == "namespace" {
        "audit_walk".into()
    } else {
        format!("walk_{name}")
    }
}

/// Every non-GET operation of the document that takes a token (`open`: false), or every one
/// that takes none (`open`: true — a webhook's POST, whose signature is its credential):
/// (method, route pattern, a path to call it at, whether it takes a body).
fn mutating_operations(doc: &Value, open: bool) -> Vec<(Method, String, String, bool)> {
    let mut ops = Vec::new();
    for (route, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if (op["security"] == serde_json::json!([{}])) != open {
                continue;
            }
            let method = match method.as_str() {
                "post" => Method::POST,
                "put" => Method::PUT,
                "patch" => Method::PATCH,
                "delete" => Method::DELETE,
                _ => continue,
            };
            let mut path = route.clone();
            while let Some(start) = path.find('{') {
                let end = start + path[start..].find('}').expect("a closing brace");
                let value = param_value(op, &path[start + 1..end]);
                path.replace_range(start..=end, &value);
            }
            let body = op.get("requestBody").is_some();
            ops.push((method, route.clone(), path, body));
        }
    }
    ops
}

/// Calls each operation once (with `token`, or none); the status each was answered.
async fn walk(
    o: &RunningOrchestrator,
    ops: &[(Method, String, String, bool)],
    token: Option<&str>,
) -> anyhow::Result<BTreeMap<(String, String), u16>> {
    let http = reqwest::Client::new();
    let mut answered = BTreeMap::new();
    for (method, route, path, body) in ops {
        let mut req = http.request(method.clone(), format!("{}{path}", o.url()));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if *body {
            req = req.json(&json!({}));
        }
        let status = req.send().await?.status().as_u16();
        answered.insert((method.to_string(), route.clone()), status);
    }
    Ok(answered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutating_route_writes_exactly_one_audit_row_and_none_is_changed()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let (o, root) = guarded(&mut env).await?;
    let db = PgPool::connect(&env.config.database_url).await?;
    let doc: Value = reqwest::get(format!("{}/openapi.json", o.url()))
        .await?
        .json()
        .await?;
    let ops = mutating_operations(&doc, false);
    assert!(
        ops.len() >= 20,
        "{} mutating operations documented",
        ops.len()
    );

    // With the admin token: answered in every way a route answers (most refuse `{}`).
    let with_token = walk(&o, &ops, Some(&root)).await?;
    written(&o, ops.len() as u64).await?;
    let before = rows(&db).await?;
    assert_eq!(before.len(), ops.len(), "one row per request: {before:#?}");
    for row in &before {
        let key = (
            row["method"].as_str().unwrap_or_default().to_owned(),
            row["route"].as_str().unwrap_or_default().to_owned(),
        );
        assert_eq!(
            with_token.get(&key).map(|s| i64::from(*s)),
            row["status"].as_i64(),
            "{key:?}: {row}"
        );
        assert_eq!(row["token_name"], "root", "{row}");
        assert!(row["token_id"].as_i64().is_some(), "{row}");
        assert_eq!(row["peer"], "127.0.0.1", "{row}");
    }
    let distinct: std::collections::BTreeSet<_> = before
        .iter()
        .map(|r| (r["method"].to_string(), r["route"].to_string()))
        .collect();
    assert_eq!(distinct.len(), ops.len(), "each operation exactly once");

    // Without a token: every request refused (401), and each refusal recorded, by no one.
    let without = walk(&o, &ops, None).await?;
    assert!(without.values().all(|s| *s == 401), "{without:?}");
    written(&o, 2 * ops.len() as u64).await?;
    let after = rows(&db).await?;
    assert_eq!(after.len(), 2 * ops.len());
    // No route changed or deleted a row: the first walk's rows are as they were.
    assert_eq!(&after[..before.len()], &before[..]);
    for row in &after[before.len()..] {
        assert_eq!(row["status"], 401, "{row}");
        assert!(
            row["token_name"].is_null() && row["token_id"].is_null(),
            "{row}"
        );
    }

    // The routes that take no token: one row each too, by no one, as answered (no such webhook).
    let open = mutating_operations(&doc, true);
    assert!(!open.is_empty(), "a webhook's POST is documented open");
    let answered = walk(&o, &open, None).await?;
    assert!(answered.values().all(|s| *s == 404), "{answered:?}");
    let after_open = 2 * ops.len() + open.len();
    written(&o, after_open as u64).await?;
    let after = rows(&db).await?;
    assert_eq!(after.len(), after_open);
    for row in &after[2 * ops.len()..] {
        let key = (
            row["method"].as_str().unwrap_or_default().to_owned(),
            row["route"].as_str().unwrap_or_default().to_owned(),
        );
        assert_eq!(
            answered.get(&key).map(|s| i64::from(*s)),
            row["status"].as_i64(),
            "{row}"
        );
        assert!(row["token_id"].is_null(), "{row}");
    }

    // The API reads the same rows, newest first.
    let admin = Client::with_token(&o.url(), Some(&root));
    let page = admin
        .audit(&AuditQuery {
            limit: Some(500),
            ..AuditQuery::default()
        })
        .await?;
    assert_eq!(page.entries.len(), after.len());
    assert_eq!(
        page.entries[0].id,
        after.last().unwrap()["id"].as_i64().unwrap()
    );
    o.stop().await;
    env.cleanup().await
}
