//! The audit log: every request to a route that changes something (each non-GET operation of
//! the OpenAPI document, walked from the document itself) leaves exactly one row, refused or
//! not; no route changes or deletes a row, and neither does SQL outside the retention purge;
//! an admin token scoped to namespaces reads the rows of its namespaces only.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{AuditQuery, Client, CreateTask};
use tasker_orchestration::store::{Scope, Store};
use tasker_shared::config::AuthMode;

use super::common::{pair, token};

/// An orchestrator that requires tokens, and its first admin token (of every namespace, named
/// `root`), made before it starts as an operator would.
async fn guarded(env: &mut TestEnv) -> anyhow::Result<(RunningOrchestrator, String)> {
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let root = super::common::make_token(&store, "root", Scope::Admin, None).await?;
    Ok((env.orchestrator().await?, root))
}

/// Waits until this orchestrator's audit writer has written `rows` rows in all.
async fn written(o: &RunningOrchestrator, rows: u64) -> anyhow::Result<()> {
    let mut written = o.shared.audit.written();
    let waited = tokio::time::timeout(Duration::from_secs(10), written.wait_for(|n| *n >= rows))
        .await
        .map(|r| r.map(drop));
    match waited {
        Ok(done) => Ok(done?),
        Err(_) => anyhow::bail!("{} of {rows} audit rows written in 10 s", *written.borrow()),
    }
}

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

/// Every row, oldest first, as the table holds it.
async fn rows(db: &PgPool) -> anyhow::Result<Vec<Value>> {
    Ok(
        sqlx::query_scalar("SELECT to_jsonb(a) FROM audit_log a ORDER BY id")
            .fetch_all(db)
            .await?,
    )
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

/// Two namespaces' requests: as `root`, a template, a task and its cancel in each of
/// `audit_a` and `audit_b`; as `writer-a` (write, `audit_a`), a cancel of a's task again (409)
/// and a token asked for, which its scope refuses (403). Eight rows.
struct Two {
    o: RunningOrchestrator,
    root: String,
    /// `admin-a`: an admin token of `audit_a` only.
    scoped: String,
    writer: String,
    a: uuid::Uuid,
    b: uuid::Uuid,
}

async fn two_namespaces(env: &mut TestEnv) -> anyhow::Result<Two> {
    let (o, root) = guarded(env).await?;
    let admin = Client::with_token(&o.url(), Some(&root));
    let mut ids = Vec::new();
    for ns in ["audit_a", "audit_b"] {
        admin.register_template(&pair(ns), None, None).await?;
        let task = admin
            .create_task(&CreateTask::new(ns, "pair").context(json!({"value": 1})))
            .await?;
        // A route of a task names no namespace itself: the row gets the task's.
        admin.cancel(task.id).await?;
        ids.push(task.id);
    }
    let scoped = token(&o, "admin-a", Scope::Admin, Some("audit_a")).await?;
    let writer = token(&o, "writer-a", Scope::Write, Some("audit_a")).await?;
    let http = reqwest::Client::new();
    let again = http
        .post(format!("{}/v1/tasks/{}/cancel", o.url(), ids[0]))
        .bearer_auth(&writer)
        .send()
        .await?;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let refused = http
        .post(format!("{}/v1/tokens", o.url()))
        .bearer_auth(&writer)
        .json(&json!({"name": "mine", "scope": "read"}))
        .send()
        .await?;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    written(&o, 8).await?;
    Ok(Two {
        o,
        root,
        scoped,
        writer,
        a: ids[0],
        b: ids[1],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_admin_reads_only_the_rows_of_its_namespaces() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let Two {
        o,
        root,
        scoped,
        writer,
        a,
        b,
    } = two_namespaces(&mut env).await?;
    let admin = Client::with_token(&o.url(), Some(&root));
    let reader = Client::with_token(&o.url(), Some(&scoped));
    let all = admin.audit(&AuditQuery::default()).await?.entries;
    let mine = reader.audit(&AuditQuery::default()).await?.entries;
    assert_eq!(all.len(), 8, "{all:#?}");
    for e in &mine {
        assert!(
            !e.namespaces.is_empty() && e.namespaces.iter().all(|n| n == "audit_a"),
            "a scoped admin reads only rows of its namespaces: {e:?}"
        );
    }
    let routes: Vec<_> = mine.iter().map(|e| (e.route.as_str(), e.task_id)).collect();
    assert!(routes.contains(&("/v1/tasks", Some(a))), "{routes:?}");
    assert!(
        routes.contains(&("/v1/tasks/{id}/cancel", Some(a))),
        "{routes:?}"
    );
    assert_eq!(mine.len(), 4, "a's template, task, two cancels: {mine:#?}");
    assert!(
        all.iter().any(|e| e.task_id == Some(b)),
        "root reads b's rows"
    );
    let b_rows = admin
        .audit(&AuditQuery {
            namespace: Some("audit_b".into()),
            ..AuditQuery::default()
        })
        .await?
        .entries;
    assert!(b_rows.iter().all(|e| e.namespaces == ["audit_b"]) && b_rows.len() == 3);
    // Another namespace asked for by name: refused.
    let err = reader
        .audit(&AuditQuery {
            namespace: Some("audit_b".into()),
            ..AuditQuery::default()
        })
        .await
        .expect_err("another namespace");
    assert!(err.to_string().contains("forbidden"), "{err}");
    // A write token may not read the log at all.
    let err = Client::with_token(&o.url(), Some(&writer))
        .audit(&AuditQuery::default())
        .await
        .expect_err("admin only");
    assert!(err.to_string().contains("forbidden"), "{err}");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_is_filtered_and_paged_in_the_api_and_the_cli() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let Two { o, root, .. } = two_namespaces(&mut env).await?;
    let admin = Client::with_token(&o.url(), Some(&root));
    let by_writer = admin
        .audit(&AuditQuery {
            token: Some("writer-a".into()),
            ..AuditQuery::default()
        })
        .await?
        .entries;
    let by_writer: Vec<_> = by_writer
        .iter()
        .map(|e| (e.route.as_str(), e.status))
        .collect();
    assert_eq!(
        by_writer,
        [("/v1/tokens", 403), ("/v1/tasks/{id}/cancel", 409)],
        "newest first, refusals recorded with the token"
    );
    cli_reads_by_token_and_namespace(&o, &root)?;
    let all = admin.audit(&AuditQuery::default()).await?.entries;
    let first = all.last().expect("rows").at;
    let cancels = admin
        .audit(&AuditQuery {
            route: Some("/v1/tasks/{id}/cancel".into()),
            method: Some("POST".into()),
            limit: Some(1),
            ..AuditQuery::default()
        })
        .await?;
    assert_eq!(cancels.entries.len(), 1);
    let next = admin
        .audit(&AuditQuery {
            route: Some("/v1/tasks/{id}/cancel".into()),
            before: cancels.next_before,
            limit: Some(10),
            ..AuditQuery::default()
        })
        .await?;
    assert_eq!(next.entries.len(), 2, "three cancels, one a page then two");
    let later = admin
        .audit(&AuditQuery {
            since: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
            ..AuditQuery::default()
        })
        .await?;
    assert!(later.entries.is_empty());
    let earlier = admin
        .audit(&AuditQuery {
            until: Some(first),
            ..AuditQuery::default()
        })
        .await?;
    assert!(earlier.entries.is_empty(), "nothing before the first row");
    let bad = reqwest::Client::new()
        .get(format!("{}/v1/audit?since=yesterday", o.url()))
        .bearer_auth(&root)
        .send()
        .await?;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(bad.json::<Value>().await?["error"]["code"], "invalid_time");
    o.stop().await;
    env.cleanup().await
}

/// `tasker audit` as an operator runs it: by token name (`--token` is the CLI's own token) and
/// by namespace, a page at a time.
fn cli_reads_by_token_and_namespace(o: &RunningOrchestrator, root: &str) -> anyhow::Result<()> {
    // The CLI: the same rows by the token's name (its own `--token` is the caller's).
    let cli = |args: &[&str]| {
        std::process::Command::new(tasker::workspace_binary("tasker")?)
            .args(args)
            .env("TASKER_URL", o.url())
            .env("TASKER_TOKEN", root)
            .output()
            .map_err(anyhow::Error::from)
    };
    let listed = cli(&["audit", "--token-name", "writer-a", "--json"])?;
    assert!(listed.status.success(), "{listed:?}");
    let page: Value = serde_json::from_slice(&listed.stdout)?;
    let routes: Vec<_> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["route"].clone(), e["token_name"].clone()))
        .collect();
    assert_eq!(
        routes,
        [
            (json!("/v1/tokens"), json!("writer-a")),
            (json!("/v1/tasks/{id}/cancel"), json!("writer-a"))
        ]
    );
    let table = cli(&["audit", "--namespace", "audit_b", "--limit", "2"])?;
    let text = String::from_utf8(table.stdout)?;
    assert!(
        text.contains("POST /v1/tasks/{id}/cancel") && text.contains("namespaces: audit_b"),
        "{text}"
    );
    assert!(
        String::from_utf8(table.stderr)?.contains("more: tasker audit --before"),
        "two of b's three rows: a page left"
    );
    Ok(())
}

/// SQLSTATE of `sql`'s failure (statements run on `conn` as one simple query), if it failed in
/// the database; its transaction is rolled back either way.
async fn refused(conn: &mut sqlx::PgConnection, sql: &str) -> Option<String> {
    let outcome = match sqlx::raw_sql(sql).execute(&mut *conn).await {
        Ok(_) => None,
        Err(sqlx::Error::Database(e)) => e.code().map(|c| c.into_owned()),
        Err(e) => Some(e.to_string()),
    };
    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_cannot_change_or_delete_a_row_but_the_retention_purge_removes_old_ones()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let db = PgPool::connect(&env.config.database_url).await?;
    o.client
        .register_template(&pair("audit_sql"), None, None)
        .await?;
    written(&o, 1).await?;
    // An old row, as if written 40 days ago (an INSERT is what the log allows).
    sqlx::query(
        "INSERT INTO audit_log (at, method, route, status)
         VALUES (now() - interval '40 days', 'POST', '/v1/tasks', 201)",
    )
    .execute(&db)
    .await?;
    let before = rows(&db).await?;
    assert_eq!(before.len(), 2);
    for sql in [
        "UPDATE audit_log SET status = 200",
        "UPDATE audit_log SET token_name = 'someone-else' WHERE id = (SELECT min(id) FROM audit_log)",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE at < now() - interval '1 day'",
        "TRUNCATE audit_log",
        // The purge's own setting, with a cut-off too recent to be a retention's: refused.
        "BEGIN; SELECT set_config('tasker.audit_purge_before', now()::text, true); \
         DELETE FROM audit_log; COMMIT",
    ] {
        let mut conn = db.acquire().await?;
        assert_eq!(
            refused(&mut conn, sql).await.as_deref(),
            Some("42501"),
            "{sql}"
        );
    }
    assert_eq!(rows(&db).await?, before, "every row as it was");

    // The retention purge (30 days) takes the old row, and only it.
    let mut session = o
        .shared
        .store
        .purge_session(true)
        .await?
        .expect("waited for the lock");
    let purged = session.audit(Duration::from_secs(30 * 86_400), 100).await?;
    session.end().await;
    assert_eq!(purged, 1);
    assert_eq!(rows(&db).await?, before[..1], "the recent row stays");
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retention_loop_purges_the_rows_older_than_retention_audit() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.retention.audit = "30d".into();
    let store = Store::connect(&env.config.database_url, 2).await?;
    for days in [40, 20] {
        sqlx::query(
            "INSERT INTO audit_log (at, method, route, status)
             VALUES (now() - make_interval(days => $1), 'POST', '/v1/tasks', 201)",
        )
        .bind(days)
        .execute(store.pool())
        .await?;
    }
    let db = store.pool().clone();
    // The loop's first pass comes as the orchestrator starts.
    let o = env.orchestrator().await?;
    o.until(Duration::from_secs(20), "the 40-day-old row purged", || {
        let db = db.clone();
        async move {
            let old: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM audit_log WHERE at < now() - interval '30 days'",
            )
            .fetch_one(&db)
            .await?;
            Ok((old == 0).then_some(()))
        }
    })
    .await?;
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&db)
        .await?;
    assert_eq!(kept, 1, "the 20-day-old row is kept");
    o.stop().await;
    env.cleanup().await
}
