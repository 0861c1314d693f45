//! Reading the log: an admin token scoped to namespaces reads the rows of its namespaces only
//! (and a write token none); the API and the CLI filter the rows by token, namespace, route,
//! method and time, and page them.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{AuditQuery, Client, CreateTask};
use tasker_orchestration::store::Scope;

use super::{guarded, written};
use crate::common::{pair, token};

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
