//! One team's token never starts another team's work: a `child:` step into a namespace the
//! token does not cover is refused when the template is registered, when a task is created one
//! at a time or in bulk, and when a schedule is saved; work saved with a token that is revoked
//! afterwards stops where it would start more (a child's start, a schedule's fire); and a
//! template that starts itself stops at the budget of tasks below its root.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv};
use tasker_orchestration::store::Scope;
use uuid::Uuid;

use crate::common::{call, client, pair, register, tasks_in, token, with_tokens};

/// A template of `sec_a` whose second step starts `sec_b/pair` once signal `go` arrives.
const THIEF: &str = "namespace: sec_a
name: thief
version: 1.0.0
steps:
  - name: gate
    wait: {signal: go}
  - name: steal
    depends_on: [gate]
    child: {namespace: sec_b, template: pair}
";

/// A step's error kind, as the API shows it.
async fn error_kind(o: &RunningOrchestrator, task: Uuid, step: &str) -> anyhow::Result<String> {
    let steps = o.client.steps(task).await?;
    let s = steps
        .iter()
        .find(|s| s.name == step)
        .ok_or_else(|| anyhow::anyhow!("no step {step}"))?;
    Ok(s.error
        .as_ref()
        .and_then(|e| e["kind"].as_str())
        .unwrap_or_default()
        .to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_into_another_namespace_is_refused_wherever_work_is_saved() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_a"), pair("sec_b")] {
        assert_eq!(register(&o, &root, &yaml).await.0, StatusCode::CREATED);
    }
    let a = token(&o, "a-writer", Scope::Write, Some("sec_a")).await?;

    // Registration: the child's namespace needs the token too.
    assert_eq!(
        register(&o, &a, THIEF).await,
        (StatusCode::FORBIDDEN, "forbidden".to_owned())
    );
    // Registered by someone who may, it is still not a's to start.
    assert_eq!(register(&o, &root, THIEF).await.0, StatusCode::CREATED);
    let thief = json!({"namespace": "sec_a", "name": "thief"});
    let (status, code, body) = call(&o, Method::POST, "/v1/tasks", &a, Some(thief.clone())).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    assert_eq!(body["error"]["details"]["namespace"], "sec_b", "{body}");
    assert!(
        body["error"]["details"]["via"]
            .as_str()
            .is_some_and(|v| v.contains("steal")),
        "{body}"
    );
    // In bulk: that item is refused, the healthy one beside it created.
    let batch = json!({"tasks": [thief, {"namespace": "sec_a", "name": "pair",
                                         "context": {"value": 1}}]});
    let (status, _, body) = call(&o, Method::POST, "/v1/tasks:batch", &a, Some(batch)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"][0]["status"], "refused", "{body}");
    assert_eq!(body["results"][0]["error"]["code"], "forbidden", "{body}");
    assert_eq!(body["results"][1]["status"], "created", "{body}");
    // A schedule is saved with the token that will fire it.
    let schedule = json!({"namespace": "sec_a", "name": "nightly", "template": "thief",
                          "cron": "0 3 * * *"});
    let (status, code, _) = call(&o, Method::POST, "/v1/schedules", &a, Some(schedule)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    assert_eq!(tasks_in(&o, "sec_b").await?, 0, "a task reached sec_b");
    assert_eq!(tasks_in(&o, "sec_a").await?, 1, "only the healthy task");

    // The healthy task beside the attacks completes.
    let worker = env.rust_worker_for(&["sec_a"]);
    let healthy = body_task(&o, &root).await?;
    assert_eq!(o.wait(healthy).await?.state, "complete");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// Creates a `sec_a/pair` task as `token`; its id.
async fn body_task(o: &RunningOrchestrator, token: &str) -> anyhow::Result<Uuid> {
    let req = json!({"namespace": "sec_a", "name": "pair", "context": {"value": 2}});
    let (status, _, body) = call(o, Method::POST, "/v1/tasks", token, Some(req)).await;
    anyhow::ensure!(status == StatusCode::CREATED, "{body}");
    Ok(body["id"].as_str().unwrap_or_default().parse()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_saved_by_a_revoked_token_starts_nothing_more() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_b"), THIEF.to_owned()] {
        assert_eq!(register(&o, &root, &yaml).await.0, StatusCode::CREATED);
    }
    let ab = token(&o, "ab-writer", Scope::Write, Some("sec_a,sec_b")).await?;
    // A task the token may create; it reaches its child only once signalled.
    let req = json!({"namespace": "sec_a", "name": "thief"});
    let (status, _, body) = call(&o, Method::POST, "/v1/tasks", &ab, Some(req)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let task: Uuid = body["id"].as_str().unwrap_or_default().parse()?;
    // And a schedule it saves, firing every second.
    let every = json!({"namespace": "sec_a", "name": "often", "template": "thief",
                       "cron": "* * * * * *", "overlap": "allow"});
    let (status, _, body) = call(&o, Method::POST, "/v1/schedules", &ab, Some(every)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let admin = client(&o, &root);
    o.until(Duration::from_secs(10), "a first fire", || async {
        let s = admin.schedule("sec_a", "often").await?;
        Ok((s.fires > 0).then_some(()))
    })
    .await?;

    let (status, _, _) = call(&o, Method::DELETE, "/v1/tokens/ab-writer", &root, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The child's start is judged with the task's token, now revoked.
    let (status, _, body) = call(
        &o,
        Method::POST,
        &format!("/v1/tasks/{task}/signals/go"),
        &root,
        Some(json!({})),
    )
    .await;
    assert!(status.is_success(), "{body}");
    assert_eq!(o.wait(task).await?.state, "error");
    assert_eq!(error_kind(&o, task, "steal").await?, "child_not_permitted");
    assert_eq!(tasks_in(&o, "sec_b").await?, 0, "a child started in sec_b");
    // The schedule pauses at its next fire, saying why, and starts nothing after.
    let paused = o
        .until(Duration::from_secs(10), "the schedule paused", || async {
            let s = admin.schedule("sec_a", "often").await?;
            Ok(s.paused.then_some(s))
        })
        .await?;
    let note = paused.note.clone().unwrap_or_default();
    assert!(note.contains("revoked"), "{note}");
    let late: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tasks WHERE idempotency_key LIKE 'schedule:%' AND created_at > $1",
    )
    .bind(paused.updated_at)
    .fetch_one(o.shared.store.pool())
    .await?;
    assert_eq!(late, 0, "a fire after the schedule paused");
    let fired = paused.fires;
    assert_eq!(admin.schedule("sec_a", "often").await?.fires, fired);
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_starts_itself_stops_at_its_budget() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.max_child_tasks = 30;
    let o = env.orchestrator().await?;
    let bomb = "namespace: sec_bomb\nname: bomb\nversion: 1.0.0\nsteps:\n".to_owned()
        + &["x", "y", "z"]
            .iter()
            .map(|s| format!("  - name: {s}\n    child: {{template: bomb}}\n"))
            .collect::<String>();
    o.client
        .register_template(&bomb, Some("bomb.yaml"), None)
        .await?;
    // More child steps than any template may have: refused when registered.
    let wide = "namespace: sec_bomb\nname: wide\nversion: 1.0.0\nsteps:\n".to_owned()
        + &(0..33)
            .map(|i| format!("  - name: s{i}\n    child: {{template: bomb}}\n"))
            .collect::<String>();
    let refused = o
        .client
        .register_template(&wide, Some("wide.yaml"), None)
        .await
        .expect_err("33 child steps");
    assert!(refused.to_string().contains("child steps"), "{refused}");

    let worker = env.rust_worker();
    let root = o
        .client
        .create_task(&tasker_client::CreateTask::new("sec_bomb", "bomb"))
        .await?
        .id;
    let healthy = o
        .run_task("rust_examples", "linear", json!({"value": 3}))
        .await?;
    assert_eq!(healthy.state, "complete");
    assert_eq!(o.wait(root).await?.state, "error");
    let below: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE root_task_id = $1")
        .bind(root)
        .fetch_one(o.shared.store.pool())
        .await?;
    assert!((1..=30).contains(&below), "{below} tasks below the root");
    let budget: Vec<Value> = sqlx::query_scalar(
        "SELECT s.error FROM steps s JOIN tasks t ON t.id = s.task_id
         WHERE (t.id = $1 OR t.root_task_id = $1) AND s.error->>'kind' = 'child_budget_exceeded'",
    )
    .bind(root)
    .fetch_all(o.shared.store.pool())
    .await?;
    assert!(
        !budget.is_empty(),
        "no step failed with child_budget_exceeded"
    );
    assert!(
        budget[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_child_tasks")),
        "{}",
        budget[0]
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
