//! Registering templates at run time: validation as at start-up, immutable versions, versions
//! side by side, a running task keeping its version, and every orchestrator seeing a new
//! version at once — against real PostgreSQL and RabbitMQ, with orchestrators started without
//! any templates.

use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tasker::{RunningOrchestrator, TestEnv, workspace_binary};
use tasker_client::CreateTask;
use tasker_orchestration::events::Event;

#[path = "templates/alert_sinks.rs"]
mod alert_sinks;
#[path = "templates/alerts.rs"]
mod alerts;
#[path = "templates/event_waits.rs"]
mod event_waits;
#[path = "templates/events.rs"]
mod events;
#[path = "templates/start_controls.rs"]
mod start_controls;
#[path = "templates/stream_children.rs"]
mod stream_children;
#[path = "templates/streams.rs"]
mod streams;
#[path = "templates/schema.rs"]
mod template_schema;
#[path = "templates/webhooks.rs"]
mod webhooks;

/// A one-step template in the brand-new namespace `shop` whose step runs `handler`.
fn order(version: &str, handler: &str) -> String {
    format!(
        "namespace: shop\nname: order\nversion: {version}\ndescription: one step\nsteps:\n  \
         - name: price\n    handler: {handler}\n"
    )
}

/// An environment whose orchestrators start with no templates at all.
async fn bare_env() -> anyhow::Result<TestEnv> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    Ok(env)
}

/// `POST /v1/templates` with `body`; returns the status and the JSON answer.
async fn post(o: &RunningOrchestrator, query: &str, body: Vec<u8>) -> anyhow::Result<(u16, Value)> {
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/templates{query}", o.url()))
        .header("content-type", "application/yaml")
        .body(body)
        .send()
        .await?;
    let status = resp.status().as_u16();
    Ok((status, resp.json().await?))
}

async fn count(o: &RunningOrchestrator) -> anyhow::Result<usize> {
    Ok(o.client.templates(None, None).await?.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_validates_like_start_up_and_versions_are_immutable() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    assert_eq!(count(&o).await?, 0, "started without templates");

    let (status, v) = post(&o, "?registered_by=ada", order("1.0.0", "double").into()).await?;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["registered_by"], "ada");
    let id = v["id"].clone();

    // The same definition again — as sent, and reformatted as JSON — changes nothing.
    let (status, v) = post(&o, "?registered_by=bob", order("1.0.0", "double").into()).await?;
    assert_eq!(
        (status, &v["id"], &v["registered_by"]),
        (200, &id, &json!("ada"))
    );
    let as_json = json!({"version": "1.0.0", "name": "order", "namespace": "shop",
        "description": "one step", "steps": [{"handler": "double", "name": "price"}]});
    let (status, _) = post(&o, "", as_json.to_string().into()).await?;
    assert_eq!(status, 200);

    // A changed definition under the same version is refused and stores nothing.
    let (status, v) = post(&o, "?registered_by=eve", order("1.0.0", "square").into()).await?;
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["error"]["code"], "template_version_conflict");
    assert_eq!(v["error"]["details"]["registered_by"], "ada");
    let stored = o.client.template("shop", "order", Some("1.0.0")).await?;
    assert_eq!(stored.definition["steps"][0]["handler"], "double");

    // An invalid template gets the start-up error, pointing into the submitted text.
    let bad = "namespace: shop\nname: broken\nversion: 1.0.0\nsteps:\n  - name: a\n    \
               handler: h\n  - name: b\n    handler: h\n    depends_on: [nope]\n";
    let (status, v) = post(&o, "?source=broken.yaml", bad.into()).await?;
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "invalid_template");
    assert_eq!(
        (
            &v["error"]["details"]["line"],
            &v["error"]["details"]["column"]
        ),
        (&serde_json::json!(7), &serde_json::json!(5)),
        "{v}"
    );
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("broken.yaml:7:5: step `b` depends on unknown step `nope`"),
        "{message}"
    );

    // Hostile templates: each a 4xx with a stable code, and nothing stored.
    let nul = order("2.0.0", "dou\u{0}ble");
    let huge_attempts = format!(
        "{}    retry: {{ max_attempts: 3000000000 }}\n",
        order("2.0.0", "h")
    );
    let deep = format!(
        "{}context_schema: {}{}\n",
        order("2.0.0", "h"),
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("NUL in a handler", nul.into(), 422, "invalid_template"),
        (
            "max_attempts 3e9",
            huge_attempts.into(),
            422,
            "invalid_template",
        ),
        ("nesting 20,000 deep", deep.into(), 422, "invalid_template"),
        ("not UTF-8", vec![0xff, 0xfe, b'a'], 422, "invalid_template"),
        ("empty", Vec::new(), 422, "invalid_template"),
        (
            "a YAML list",
            b"- 1\n- 2\n".to_vec(),
            422,
            "invalid_template",
        ),
        ("2 MiB", vec![b'#'; 2 << 20], 413, "body_too_large"),
    ];
    for (what, body, want_status, want_code) in cases {
        let (status, v) = post(&o, "", body).await?;
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (want_status, Some(want_code)),
            "{what}: {v}"
        );
    }
    let (status, v) = post(&o, "?registered_by=%00", order("3.0.0", "h").into()).await?;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid_query"))
    );
    assert_eq!(
        count(&o).await?,
        1,
        "only the first registration was stored"
    );

    // Lookups with names that cannot exist answer 404 without asking the database.
    let resp = reqwest::get(format!("{}/v1/templates/sh%00op/order", o.url())).await?;
    assert_eq!(resp.status().as_u16(), 404);

    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_run_side_by_side_and_a_running_task_keeps_its_version() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client
        .register_template(&order("1.0.0", "double"), None, Some("test"))
        .await?;
    // A task on 1.0.0 is created while no worker runs: it stays running on that version.
    let early = o
        .client
        .create_task(&CreateTask::new("shop", "order").context(json!({"value": 7})))
        .await?;
    assert_eq!(early.version, "1.0.0");

    let v2 = o
        .client
        .register_template(&order("2.0.0", "square"), None, Some("test"))
        .await?;
    assert!(v2.created);
    let worker = env.rust_worker_for(&["shop"]);

    let newest = o
        .client
        .create_task(&CreateTask::new("shop", "order").context(json!({"value": 7})))
        .await?;
    let pinned = o
        .client
        .create_task(
            &CreateTask::new("shop", "order")
                .version("1.0.0")
                .context(json!({"value": 7})),
        )
        .await?;
    let (early, newest, pinned) = (
        o.wait(early.id).await?,
        o.wait(newest.id).await?,
        o.wait(pinned.id).await?,
    );
    for (task, version, value) in [
        (&early, "1.0.0", 14),
        (&newest, "2.0.0", 49),
        (&pinned, "1.0.0", 14),
    ] {
        assert_eq!(task.state, "complete", "{task:?}");
        assert_eq!(task.version, version);
        assert_eq!(
            task.result,
            Some(json!({"price": {"value": value}})),
            "{task:?}"
        );
    }

    // Both versions are listed, oldest first, with who registered them.
    let listed = o.client.templates(Some("shop"), Some("order")).await?;
    let versions: Vec<&str> = listed.iter().map(|t| t.version.as_str()).collect();
    assert_eq!(versions, ["1.0.0", "2.0.0"]);
    assert!(
        listed
            .iter()
            .all(|t| t.registered_by.as_deref() == Some("test"))
    );

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_registered_on_one_orchestrator_reaches_the_others_at_once() -> anyhow::Result<()>
{
    let env = bare_env().await?;
    let a = env.orchestrator().await?;
    let b = env.orchestrator().await?;
    let mut b_events = b.events().subscribe();
    let registered = a
        .client
        .register_template(&order("1.0.0", "add_ten"), None, Some("test"))
        .await?;
    // b learns of it from the registration's notification, not from a request or a poll.
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut notified = false;
        loop {
            match b_events.recv().await? {
                Event::TemplateRegistered { id } if id == registered.template.id => notified = true,
                Event::TemplateLoaded { key } if key == "shop/order@1.0.0" => {
                    anyhow::ensure!(notified, "loaded before the notification arrived");
                    return anyhow::Ok(());
                }
                _ => {}
            }
        }
    })
    .await
    .context("b did not load the template within 10 s")??;
    assert!(b.shared.catalog.cached("shop", "order", None).is_some());

    let worker = env.rust_worker_for(&["shop"]);
    let task = b
        .client
        .create_task(&CreateTask::new("shop", "order").context(json!({"value": 1})))
        .await?;
    let task = b.wait(task.id).await?;
    assert_eq!(
        task.result,
        Some(json!({"price": {"value": 11}})),
        "{task:?}"
    );

    worker.stop().await;
    a.stop().await;
    b.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_refuses_to_start_with_a_changed_definition_under_a_registered_version()
-> anyhow::Result<()> {
    let mut env = bare_env().await?;
    let a = env.orchestrator().await?;
    a.client
        .register_template(&order("1.0.0", "double"), None, Some("ada"))
        .await?;
    let dir = tempdir("changed")?;
    std::fs::write(dir.join("order.yaml"), order("1.0.0", "square"))?;
    env.config.orchestrator.templates = vec![dir.clone()];
    let err = env
        .orchestrator()
        .await
        .err()
        .context("started with a changed definition")?;
    let message = format!("{err:#}");
    assert!(message.contains("shop/order@1.0.0"), "{message}");
    assert!(message.contains("order.yaml"), "{message}");
    assert!(message.contains("by ada"), "{message}");
    assert!(message.contains("new version"), "{message}");
    std::fs::remove_dir_all(dir)?;
    a.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_validates_offline_registers_and_shows_the_dag() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    let tasker = workspace_binary("tasker")?;
    let dir = tempdir("cli")?;
    std::fs::write(
        dir.join("diamond.yaml"),
        "namespace: shop\nname: diamond\nversion: 1.0.0\nsteps:\n  - name: start\n    \
         handler: double\n  - name: left\n    handler: square\n    depends_on: [start]\n  \
         - name: right\n    handler: add_ten\n    depends_on: [start]\n  - name: join\n    \
         handler: sum_parents\n    depends_on: [left, right]\n",
    )?;
    let run = |args: &[&str]| {
        std::process::Command::new(&tasker)
            .args(args)
            .env("TASKER_URL", o.url())
            .output()
    };

    // validate needs no server: the URL points nowhere.
    let out = std::process::Command::new(&tasker)
        .args(["templates", "validate"])
        .arg(&dir)
        .env("TASKER_URL", "http://127.0.0.1:9")
        .output()?;
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout)?.contains("ok  shop/diamond@1.0.0"));

    let bad = dir.join("bad");
    std::fs::create_dir(&bad)?;
    std::fs::write(
        bad.join("x.yaml"),
        "namespace: shop\nname: x\nversion: 1.0.0\nsteps:\n  - name: a\n    handler: h\n  \
         - name: a\n    handler: h\n",
    )?;
    let out = run(&["templates", "validate", bad.to_str().context("path")?])?;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr)?;
    assert!(
        stderr.contains("x.yaml:7:5: duplicate step `a` (first defined on line 5)"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&bad)?;

    let out = run(&[
        "templates",
        "register",
        dir.to_str().context("path")?,
        "--by",
        "ci",
    ])?;
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout)?.starts_with("registered  shop/diamond@1.0.0"));
    let out = run(&["templates", "register", dir.to_str().context("path")?])?;
    assert!(String::from_utf8(out.stdout)?.starts_with("unchanged   shop/diamond@1.0.0"));

    let out = run(&["templates", "show", "shop", "diamond"])?;
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8(out.stdout)?;
    assert!(
        shown.contains("registered ") && shown.contains(" by ci"),
        "{shown}"
    );
    let lines: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.starts_with("steps"))
        .collect();
    let join = lines
        .iter()
        .find(|l| l.contains("join"))
        .context("no join line")?;
    assert!(join.trim_start().starts_with("2"), "{shown}");
    assert!(join.contains("after left, right"), "{shown}");

    std::fs::remove_dir_all(dir)?;
    o.stop().await;
    env.cleanup().await
}

fn tempdir(label: &str) -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("tasker-{label}-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
