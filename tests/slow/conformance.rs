//! The conformance suite: the scenarios of `tests/conformance/scenarios.yaml` against the worker
//! of each language, started as its own process the way a user starts it. Every language must
//! give the same results, final states and attempts.

#[path = "../common/mod.rs"]
mod common;
#[path = "conformance/events.rs"]
mod events;
#[path = "../conformance/protocol.rs"]
mod protocol;

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tasker::{RunningOrchestrator, TestEnv, repo_root, steps_by_name};

use common::{scenarios, start_worker, start_worker_on, start_worker_with};

async fn conformance(language: &str) -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // The orchestrator starts with no templates: the worker registers its own when it starts.
    env.config.orchestrator.templates = Vec::new();
    let orchestrator = env.orchestrator().await?;
    let mut worker = start_worker(
        &env,
        language,
        &format!("{language}-worker"),
        &orchestrator.url(),
    )
    .await?;
    let namespace = format!("{language}_examples");
    let mut runs = Vec::new();
    for s in scenarios()? {
        let client = orchestrator.client.clone();
        let namespace = namespace.clone();
        runs.push(tokio::spawn(async move {
            let task = client
                .create_task(
                    &tasker_client::CreateTask::new(&namespace, &s.template)
                        .context(s.context.clone()),
                )
                .await?;
            let task = client.task(task.id, Some(Duration::from_secs(60))).await?;
            anyhow::Ok((s, task))
        }));
    }
    let mut failures = Vec::new();
    for run in runs {
        let (s, task) = run.await??;
        let steps = steps_by_name(&orchestrator.client, task.id).await?;
        let mut problems = Vec::new();
        if task.state != s.state {
            problems.push(format!(
                "state {} (want {}); error {:?}",
                task.state, s.state, task.error
            ));
        }
        if let Some(want) = &s.result
            && task.result.as_ref() != Some(want)
        {
            problems.push(format!("result {:?} (want {want})", task.result));
        }
        for (name, want) in &s.steps {
            let Some(got) = steps.get(name) else {
                problems.push(format!("no step {name}"));
                continue;
            };
            if got.state != want.state {
                problems.push(format!(
                    "step {name}: state {} (want {})",
                    got.state, want.state
                ));
            }
            if let Some(a) = want.attempt
                && got.attempt != a
            {
                problems.push(format!("step {name}: attempt {} (want {a})", got.attempt));
            }
            let error = got.error.clone().unwrap_or(Value::Null);
            if let Some(kind) = &want.error_kind
                && error["kind"] != kind.as_str()
            {
                problems.push(format!("step {name}: error {error} (want kind {kind})"));
            }
            if let Some(msg) = &want.error_message
                && !error["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(msg.as_str())
            {
                problems.push(format!("step {name}: error {error} (want message {msg:?})"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{language}/{}: {}", s.name, problems.join("; ")));
        }
    }
    // Steps of high- and low-priority tasks travel in their lanes: every worker takes them.
    for priority in [tasker_client::Priority::High, tasker_client::Priority::Low] {
        let task = orchestrator
            .client
            .create_task(
                &tasker_client::CreateTask::new(&namespace, "linear")
                    .context(serde_json::json!({"value": 6}))
                    .priority(priority),
            )
            .await?;
        let task = orchestrator
            .client
            .task(task.id, Some(Duration::from_secs(60)))
            .await?;
        if task.state != "complete" || task.priority != priority.as_str() {
            failures.push(format!(
                "{language}/linear at priority {}: state {} priority {}",
                priority.as_str(),
                task.state,
                task.priority
            ));
        }
    }
    // A wait step and a signal, through this language's API client.
    match signalled_through_client(language, &orchestrator.url(), &namespace).await {
        Ok(task) => {
            let want = serde_json::json!({"finish": {"value": 10, "approved_by": "conformance"}});
            if task["state"] != "complete" || task["result"] != want {
                failures.push(format!(
                    "{language}/signal_wait through its client: state {} result {} (want complete, {want})",
                    task["state"], task["result"]
                ));
            }
        }
        Err(e) => failures.push(format!("{language}/signal_wait through its client: {e:#}")),
    }
    // The worker's step latency metrics, by namespace, template and handler (the core's, the
    // same in every language).
    let metrics = reqwest::get(format!("http://{}/metrics", worker.health))
        .await?
        .text()
        .await?;
    for family in [
        "tasker_worker_step_queue_seconds_count",
        "tasker_worker_handler_duration_seconds_count",
    ] {
        let series =
            format!(r#"{family}{{namespace="{namespace}",template="linear",handler="double"}} "#);
        if !metrics.lines().any(|l| l.starts_with(&series)) {
            failures.push(format!("{language}: no {series}in the worker's /metrics"));
        }
    }
    worker.child.kill().await?;
    orchestrator.stop().await;
    env.cleanup().await?;
    anyhow::ensure!(
        failures.is_empty(),
        "conformance failures:\n{}",
        failures.join("\n")
    );
    Ok(())
}

/// Creates a `signal_wait` task with `{"value": 5}`, sends it the signal `approved` twice with
/// one id and payload, waits for it and returns it as JSON — with the language's own client
/// (`workers/<language>/conformance-client`; the Rust client in-process).
async fn signalled_through_client(
    language: &str,
    url: &str,
    namespace: &str,
) -> anyhow::Result<Value> {
    if language == "rust" {
        let client = tasker_client::Client::new(url);
        let task = client
            .create_task(
                &tasker_client::CreateTask::new(namespace, "signal_wait")
                    .context(serde_json::json!({"value": 5})),
            )
            .await?;
        let payload = Some(serde_json::json!({"approved_by": "conformance"}));
        let id = Some("conformance-1".to_owned());
        let first = client
            .signal(task.id, "approved", payload.clone(), id.clone())
            .await?;
        let again = client.signal(task.id, "approved", payload, id).await?;
        anyhow::ensure!(
            first.created && !again.created,
            "the repeated signal was stored twice"
        );
        let done = client.wait(task.id, Duration::from_secs(60)).await?;
        return Ok(serde_json::to_value(done)?);
    }
    let out = conformance_client(language, &[url.to_owned(), namespace.to_owned()]).await?;
    serde_json::from_str(&out)
        .with_context(|| format!("{language}'s client printed no JSON: {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_worker_conforms() -> anyhow::Result<()> {
    conformance("rust").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_worker_conforms() -> anyhow::Result<()> {
    conformance("python").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_worker_conforms() -> anyhow::Result<()> {
    conformance("ruby").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_worker_conforms() -> anyhow::Result<()> {
    conformance("typescript").await
}

/// Jobs, outcomes and start options as `tasker-worker/protocol.schema.json` says, the same check
/// in every language (tests/conformance/protocol.rs).
#[test]
fn rust_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::rust_speaks_the_protocol()
}

#[test]
fn python_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("python")
}

#[test]
fn ruby_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("ruby")
}

#[test]
fn typescript_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("typescript")
}

const LANGUAGES: [&str; 4] = ["rust", "ruby", "python", "typescript"];

/// All four workers on one broker: each runs only its own namespace's steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_worker_runs_only_its_own_namespace() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![repo_root().join("tests/fixtures/task_templates")];
    let orchestrator = env.orchestrator().await?;
    let mut workers = Vec::new();
    for language in LANGUAGES {
        workers.push(
            start_worker(
                &env,
                language,
                &format!("{language}-worker"),
                &orchestrator.url(),
            )
            .await?,
        );
    }
    let mut runs = Vec::new();
    for language in LANGUAGES {
        for value in 0..5 {
            let client = orchestrator.client.clone();
            runs.push(tokio::spawn(async move {
                let t = client
                    .create_task(
                        &tasker_client::CreateTask::new(format!("{language}_examples"), "diamond")
                            .context(serde_json::json!({ "value": value })),
                    )
                    .await?;
                client.task(t.id, Some(Duration::from_secs(60))).await
            }));
        }
    }
    for run in runs {
        assert_eq!(run.await??.state, "complete");
    }
    let ran: Vec<(String, Option<String>, i64)> = sqlx::query_as(
        "SELECT t.namespace, s.worker, count(*) FROM steps s JOIN tasks t ON t.id = s.task_id
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(orchestrator.shared.store.pool())
    .await?;
    assert_eq!(ran.len(), 4, "one worker per namespace: {ran:?}");
    for (namespace, worker, steps) in &ran {
        let language = namespace.trim_end_matches("_examples");
        assert_eq!(
            worker.as_deref(),
            Some(format!("{language}-worker").as_str()),
            "{namespace} steps ran on {worker:?}"
        );
        assert_eq!(*steps, 20, "{namespace}");
    }
    for mut w in workers {
        w.child.kill().await?;
    }
    orchestrator.stop().await;
    env.cleanup().await
}

/// One template whose steps run in four languages, each on its own workers' queue: every
/// result reaches the next unchanged (2^53 + 1, text beyond the BMP); the pipeline's aggregates
/// equal the oracle's; the workers registry lists the four workers and drops one killed; a step
/// for a namespace no worker serves is shown unserved, fails with `queue_timeout`, and a retry
/// completes it once a worker serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_workflow_spans_the_four_languages_and_the_registry_sees_its_workers()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![repo_root().join("tests/fixtures/task_templates")];
    let o = env.orchestrator().await?;
    let heartbeat = [("TASKER_WORKER__HEARTBEAT_MS", "300")];
    let mut workers = Vec::new();
    for language in LANGUAGES {
        let name = format!("{language}-worker");
        workers.push(start_worker_with(&env, language, &name, &o.url(), &heartbeat).await?);
    }
    // The registry: four live workers, each on its language's namespace with its handlers.
    let listed = o
        .until(Duration::from_secs(20), "four live workers", || async {
            let w = o.client.workers(false).await?;
            Ok((w.len() == 4).then_some(w))
        })
        .await?;
    for w in &listed {
        assert!(w.live);
        assert_eq!(
            w.namespaces,
            vec![format!("{}_examples", w.language)],
            "{w:?}"
        );
        assert!(w.handlers.contains(&"relay".to_owned()), "{w:?}");
        assert_eq!(w.name, format!("{}-worker", w.language));
    }

    // A chain through the four languages carries its payload exactly.
    let payload = serde_json::json!({
        "big": 9_007_199_254_740_993_u64, "negative": -9_007_199_254_740_993_i64,
        "text": "h\u{e9}llo \u{1d11e} \u{1f389}", "nested": [1.5, {"big": 18_014_398_509_481_985_u64}]
    });
    let relay = o
        .run_task(
            "polyglot",
            "relay",
            serde_json::json!({ "payload": payload }),
        )
        .await?;
    assert_eq!(relay.state, "complete", "{relay:?}");
    let steps = steps_by_name(&o.client, relay.id).await?;
    let mut hops = Vec::new();
    for (step, language) in [
        ("py", "python"),
        ("rs", "rust"),
        ("rb", "ruby"),
        ("ts", "typescript"),
    ] {
        let result = steps[step].result.as_ref().context("a result")?;
        hops.push(language);
        assert_eq!(result["payload"], payload, "{step} changed the payload");
        assert_eq!(result["hops"], serde_json::json!(hops), "{step}");
        assert_eq!(steps[step].namespace, format!("{language}_examples"));
        assert_eq!(
            steps[step].worker.as_deref(),
            Some(format!("{language}-worker").as_str())
        );
    }

    // The pipeline, one batch: the aggregates equal the oracle's.
    let batch = o
        .run_task(
            "polyglot",
            "pipeline",
            serde_json::json!({"seed": 42, "users": 10000, "first": 1000, "count": 2000}),
        )
        .await?;
    assert_eq!(batch.state, "complete", "{batch:?}");
    let mut rows = tasker::pipeline::Rows::new();
    tasker::pipeline::merge(&batch.result.as_ref().unwrap()["sink"], &mut rows)?;
    assert_eq!(rows, tasker::pipeline::oracle(42, 10_000, 1000, 2000));

    // A step no worker serves: unserved while it waits, then queue_timeout.
    let lonely = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("polyglot", "unserved")
                .context(serde_json::json!({"value": 4})),
        )
        .await?;
    let late = &steps_by_name(&o.client, lonely.id).await?["late"];
    assert!(late.unserved, "{late:?}");
    let template = o.client.template("polyglot", "unserved", None).await?;
    let unserved = template.unserved_steps.unwrap_or_default();
    assert_eq!(unserved.len(), 1);
    assert_eq!(
        (unserved[0].step.as_str(), unserved[0].namespace.as_str()),
        ("late", "late_workers")
    );
    let failed = o.wait(lonely.id).await?;
    assert_eq!(failed.state, "error");
    let late = &steps_by_name(&o.client, lonely.id).await?["late"];
    assert_eq!(late.error.as_ref().unwrap()["kind"], "queue_timeout");
    // A worker for that namespace starts; a retry completes the step.
    let dir = tasker::target_dir()
        .join("tmp")
        .join(format!("late-{}", lonely.id));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("late.yaml"),
        "namespace: late_workers\nname: late\nversion: '1'\nsteps:\n  - {name: d, handler: double}\n",
    )?;
    let mut late_worker =
        start_worker_on(&env, "rust", "late-worker", &o.url(), &dir, &heartbeat).await?;
    o.client
        .retry(lonely.id, &tasker_client::RepairNote::default())
        .await?;
    let done = o.wait(lonely.id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result.unwrap()["late"]["value"], 8);

    // A worker killed leaves the live list within its heartbeat window (3 × 300 ms).
    let ruby = workers.remove(1);
    let mut ruby = ruby;
    ruby.child.kill().await?;
    let killed = std::time::Instant::now();
    o.until(
        Duration::from_secs(10),
        "the killed worker gone",
        || async {
            let w = o.client.workers(false).await?;
            Ok((!w.iter().any(|w| w.language == "ruby")).then_some(()))
        },
    )
    .await?;
    assert!(
        killed.elapsed() < Duration::from_secs(3),
        "{:?}",
        killed.elapsed()
    );
    let all = o.client.workers(true).await?;
    assert!(all.iter().any(|w| w.language == "ruby" && !w.live));
    late_worker.child.kill().await?;
    std::fs::remove_dir_all(&dir)?;
    for mut w in workers {
        w.child.kill().await?;
    }
    o.stop().await;
    env.cleanup().await
}

/// What a client must read of a parent task with one child, the child, the parent's child step
/// and the workers, as `conformance-client URL composition PARENT` prints it: computed here
/// with the Rust client, compared with what each language's client read.
async fn composition_view(
    client: &tasker_client::Client,
    parent: uuid::Uuid,
) -> anyhow::Result<Value> {
    let task = client.task(parent, None).await?;
    let children = task.children.clone().unwrap_or_default();
    let first = children.first().context("the parent has no child")?;
    let child = client.task(first.task_id, None).await?;
    let listed = client
        .tasks(&tasker_client::TaskQuery {
            parent: Some(parent),
            ..Default::default()
        })
        .await?;
    let kid = steps_by_name(client, parent)
        .await?
        .remove("kid")
        .context("no kid step")?;
    let mut workers: Vec<Value> = client
        .workers(false)
        .await?
        .into_iter()
        .map(|w| {
            serde_json::json!({"name": w.name, "language": w.language, "live": w.live,
                               "namespaces": w.namespaces, "handlers": w.handlers})
        })
        .collect();
    workers.sort_by_key(|w| w["name"].as_str().unwrap_or_default().to_owned());
    Ok(serde_json::json!({
        "parent": {"id": task.id, "depth": task.depth, "children": children},
        "child": {"id": child.id, "parent_task_id": child.parent_task_id,
                  "parent_step_id": child.parent_step_id, "depth": child.depth,
                  "state": child.state},
        "listed": listed.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        "kid": {"step_type": kid.step_type, "namespace": kid.namespace, "unserved": kid.unserved,
                "child": kid.child},
        "workers": workers,
    }))
}

/// Each language's client reads child links, a child step and the workers registry as the Rust
/// client does (the contract those fields are checked against, on a real orchestrator).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_reads_children_and_workers() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = vec![
        tasker::templates("rust"),
        repo_root().join("tests/fixtures/task_templates/composition"),
    ];
    let o = env.orchestrator().await?;
    let mut worker = start_worker(&env, "rust", "rust-worker", &o.url()).await?;
    o.until(Duration::from_secs(20), "the worker registered", || async {
        Ok((!o.client.workers(false).await?.is_empty()).then_some(()))
    })
    .await?;
    let parent = o
        .run_task(
            "rust_examples",
            "family",
            serde_json::json!({"value": 1, "sleep_ms": 0}),
        )
        .await?;
    assert_eq!(parent.state, "complete", "{parent:?}");
    let expected = composition_view(&o.client, parent.id).await?;
    assert_eq!(expected["child"]["depth"], 1, "{expected}");
    for language in ["python", "ruby", "typescript"] {
        let out = conformance_client(
            language,
            &[o.url(), "composition".into(), parent.id.to_string()],
        )
        .await?;
        let read: Value =
            serde_json::from_str(&out).with_context(|| format!("{language} printed: {out}"))?;
        // Who is listed and what they serve, not when they were last seen (a heartbeat moves
        // that between two reads).
        assert_eq!(read, expected, "{language}'s client read otherwise");
    }
    every_client_reads_and_pauses_limits(&o).await?;
    every_client_creates_in_bulk_and_counts_a_purge(&o).await?;
    worker.child.kill().await?;
    o.stop().await;
    env.cleanup().await
}

/// Runs `workers/<language>/conformance-client` with `args` (at most 120 s): what it printed,
/// once it exited 0.
async fn conformance_client(language: &str, args: &[String]) -> anyhow::Result<String> {
    let script = repo_root()
        .join("workers")
        .join(language)
        .join("conformance-client");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&script)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("{} did not finish", script.display()))??;
    anyhow::ensure!(
        out.status.success(),
        "{language}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// A template whose step claims a concurrency slot and a token of the rate key the clients'
/// `flow` mode pauses.
const LIMITED: &str = "namespace: rust_examples
name: conformance_limits
version: '1.0.0'
concurrency: {key: /customer, limit: 3}
steps:
  - name: charge
    handler: double
    rate_limit: {key: conformance-flow, limit: 50, per: 1s, burst: 5}
";

/// The fields of the limits a client must read as the Rust client does (times compared as
/// instants: each language writes its own precision).
fn limits_view(rates: &Value, slots: &Value) -> Value {
    let instant = |v: &Value| {
        v.as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_micros())
    };
    let rates: Vec<Value> = rates
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            serde_json::json!({"key": r["key"], "limit": r["limit"], "per_ms": r["per_ms"],
                               "burst": r["burst"], "pause_note": r["pause_note"],
                               "paused_until": instant(&r["paused_until"]),
                               "throttled": r["throttled"]})
        })
        .collect();
    let slots: Vec<Value> = slots
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            serde_json::json!({"key": c["key"], "limit": c["limit"], "in_use": c["in_use"],
                               "throttled": c["throttled"]})
        })
        .collect();
    serde_json::json!({"rate": rates, "concurrency": slots})
}

/// Each language's client reads the rate and concurrency keys as the Rust client does, and
/// pauses and resumes a rate key (`conformance-client URL flow`).
async fn every_client_reads_and_pauses_limits(o: &RunningOrchestrator) -> anyhow::Result<()> {
    o.client.register_template(LIMITED, None, None).await?;
    let task = o
        .run_task(
            "rust_examples",
            "conformance_limits",
            serde_json::json!({"value": 2, "customer": "c-1"}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    for language in ["python", "ruby", "typescript"] {
        let mut rates = serde_json::to_value(o.client.rate_limits().await?)?;
        let mut slots = serde_json::to_value(o.client.concurrency_limits(None).await?)?;
        for list in [&mut rates, &mut slots] {
            if let Some(a) = list.as_array_mut() {
                a.sort_by_key(|v| v["key"].as_str().unwrap_or_default().to_owned());
            }
        }
        let expected = limits_view(&rates, &slots);
        let stdout = conformance_client(language, &[o.url(), "flow".into()]).await?;
        let mut lines = std::collections::BTreeMap::new();
        for line in stdout.lines() {
            let (label, json) = line
                .split_once(' ')
                .with_context(|| format!("{language} printed {line:?}"))?;
            lines.insert(label.to_owned(), serde_json::from_str::<Value>(json)?);
        }
        let read = limits_view(&lines["rate_limits"], &lines["concurrency_limits"]);
        assert_eq!(
            read, expected,
            "{language}'s client read the limits otherwise"
        );
        let paused = &lines["paused"];
        assert_eq!(paused["key"], "conformance-flow", "{language}: {paused}");
        assert_eq!(paused["pause_note"], "conformance", "{language}: {paused}");
        let until = chrono::DateTime::parse_from_rfc3339(paused["paused_until"].as_str().unwrap())?;
        let ahead = until.with_timezone(&chrono::Utc) - chrono::Utc::now();
        assert!(
            (58..=61).contains(&ahead.num_minutes()),
            "{language}: paused {ahead} ahead"
        );
        let resumed = &lines["resumed"];
        assert_eq!(resumed["key"], "conformance-flow", "{language}: {resumed}");
        assert!(resumed["paused_until"].is_null(), "{language}: {resumed}");
        assert!(resumed["pause_note"].is_null(), "{language}: {resumed}");
    }
    Ok(())
}

/// Each language's client sends a batch of three (two tasks, one of a template that does not
/// exist) twice: created then existing, the third refused both times with its code; then a
/// dry-run purge, and the retention policy (the defaults). The tasks are the ones the Rust
/// client sees under those keys.
async fn every_client_creates_in_bulk_and_counts_a_purge(
    o: &RunningOrchestrator,
) -> anyhow::Result<()> {
    for language in ["python", "ruby", "typescript"] {
        let prefix = format!("conformance-scale-{language}");
        let args = [
            o.url(),
            "scale".into(),
            "rust_examples".into(),
            "linear".into(),
            r#"{"value": 3}"#.into(),
            prefix.clone(),
        ];
        let stdout = conformance_client(language, &args).await?;
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines,
            [
                r#"first ["created","created","refused:unknown_template"]"#,
                r#"second ["existing","existing","refused:unknown_template"]"#,
                r#"purge {"dry_run":true,"states":["complete"],"more":false,"rows":null}"#,
                r#"retention {"complete":"30d","error":"90d","cancelled":"30d","busy_percent":5}"#,
            ],
            "{language}"
        );
        // The same two tasks, as the Rust client finds them by their keys.
        let again = o
            .client
            .create_tasks(&[tasker_client::CreateTask::new("rust_examples", "linear")
                .context(serde_json::json!({"value": 3}))
                .idempotency_key(format!("{prefix}-1"))])
            .await?;
        assert_eq!(
            again.results[0].status,
            tasker_client::BatchStatus::Existing,
            "{language}: {again:?}"
        );
    }
    Ok(())
}

#[test]
fn every_language_has_the_same_templates() -> anyhow::Result<()> {
    let root = repo_root().join("tests/fixtures/task_templates");
    let rust: Vec<_> = std::fs::read_dir(root.join("rust"))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    for language in &LANGUAGES[1..] {
        // Engine cases run on the Rust worker only: batch processing edge cases (batch_numbers*)
        // and repair by hand (tests/slow/repair.rs).
        for file in rust.iter().filter(|f| {
            let f = f.to_string_lossy();
            !f.starts_with("batch_numbers")
                && f != "repairable.yaml"
                && f != "resolvable_decision.yaml"
        }) {
            let canonical = std::fs::read_to_string(root.join("rust").join(file))?;
            let theirs = std::fs::read_to_string(root.join(language).join(file))
                .with_context(|| format!("{language} lacks {file:?}"))?;
            assert_eq!(
                theirs,
                canonical.replace(
                    "namespace: rust_examples",
                    &format!("namespace: {language}_examples")
                ),
                "{language}/{file:?} differs from rust/{file:?} beyond its namespace"
            );
        }
    }
    Ok(())
}
