//! The audit log page (`tests/dashboard/audit.mjs`): every request that changed something,
//! filtered by namespace and method, and an admin of one namespace sees only its rows.

use super::*;

/// A two-step template of `namespace` on the Rust fixture handlers.
fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// Eight requests that change something, audited: a template, a task and its cancel in each of
/// `dash_a` and `dash_b` (as `root`), a purge without a token (401) and a revoke of no token
/// (404). Returns the two tasks, once every row is written.
async fn audited_requests(
    o: &tasker::RunningOrchestrator,
    root: &tasker_client::Client,
    root_token: &str,
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let mut tasks = Vec::new();
    for ns in ["dash_a", "dash_b"] {
        root.register_template(&pair(ns), None, None).await?;
        let task = root
            .create_task(&CreateTask::new(ns, "pair").context(json!({"value": 1})))
            .await?;
        root.cancel(task.id).await?;
        tasks.push(task.id);
    }
    let http = reqwest::Client::new();
    let purge = http.post(format!("{}/v1/purge", o.url())).send().await?;
    assert_eq!(purge.status(), 401);
    let revoke = http
        .delete(format!("{}/v1/tokens/nobody", o.url()))
        .bearer_auth(root_token)
        .send()
        .await?;
    assert_eq!(revoke.status(), 404);
    let mut written = o.shared.audit.written();
    tokio::time::timeout(Duration::from_secs(10), written.wait_for(|n| *n >= 8)).await??;
    Ok(tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_page_in_a_real_browser() -> anyhow::Result<()> {
    use tasker_orchestration::store::{NewToken, Scope, Store};
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.auth = AuthMode::Tokens;
    let store = Store::connect(&env.config.database_url, 2).await?;
    let dash_a = tasker_shared::namespaces::Patterns::parse("dash_a")?;
    let mut tokens = Vec::new();
    for (name, namespaces) in [("root", None), ("admin-a", Some(&dash_a))] {
        let new = NewToken {
            name,
            scope: Scope::Admin,
            namespaces,
            expires_at: None,
            created_by: None,
            minter: None,
        };
        tokens.push(store.create_token(&new).await?.token);
    }
    let o = env.orchestrator().await?;
    let root = tasker_client::Client::with_token(&o.url(), Some(&tokens[0]));
    let tasks = audited_requests(&o, &root, &tokens[0]).await?;

    let shots = screenshots();
    let report = clean_tour(
        "audit.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("ROOT_TOKEN", tokens[0].clone()),
            ("SCOPED_TOKEN", tokens[1].clone()),
            ("SCOPED_NAMESPACE", "dash_a".to_owned()),
            ("OTHER_NAMESPACE", "dash_b".to_owned()),
        ],
    )
    .await?;
    let rows = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    // Every row the API has, newest first, as the page shows them.
    let api = root.audit(&tasker_client::AuditQuery::default()).await?;
    let ids: Vec<i64> = rows("all")
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    assert_eq!(ids, api.entries.iter().map(|e| e.id).collect::<Vec<_>>());
    assert_eq!(ids.len(), 8, "{report}");
    let refused = rows("all")
        .into_iter()
        .find(|r| r["route"] == "/v1/purge")
        .expect("the refused purge is listed");
    assert_eq!(
        (
            &refused["status"],
            &refused["refusedMark"],
            &refused["token"]
        ),
        (&json!(401), &json!(true), &json!("none")),
        "{report}"
    );
    let cancel_b = rows("all")
        .into_iter()
        .find(|r| r["route"] == "/v1/tasks/{id}/cancel" && r["namespaces"] == "dash_b")
        .expect("b's cancel is listed");
    assert_eq!(cancel_b["taskHref"], format!("#/tasks/{}", tasks[1]));
    assert_eq!(cancel_b["token"], "root");
    assert_eq!(report["navCurrent"], "page", "{report}");
    // Filtered on b: its template, task and cancel; on DELETE: the revoke.
    assert_eq!(rows("filtered").len(), 3, "{report}");
    let deletes = rows("deletes");
    assert_eq!(deletes.len(), 1, "{report}");
    assert_eq!(deletes[0]["request"], "DELETE /v1/tokens/{name}");
    assert!(
        deletes[0]["targets"]
            .as_str()
            .is_some_and(|t| t.contains("token nobody")),
        "{report}"
    );
    assert_eq!(report["retention"], "kept 90d", "{report}");
    // The admin of dash_a: a's three rows only.
    let scoped = rows("scoped");
    assert_eq!(scoped.len(), 3, "{report}");
    assert!(
        scoped.iter().all(|r| r["namespaces"] == "dash_a"),
        "{report}"
    );
    assert_screenshots(&shots, &["a1-audit", "a2-namespace", "a3-scoped"]);
    o.stop().await;
    env.cleanup().await
}
