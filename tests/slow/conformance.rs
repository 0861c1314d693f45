//! The conformance suite: the scenarios of `tests/conformance/scenarios.yaml` against the worker
//! of each language, started as its own process the way a user starts it. Every language must
//! give the same results, final states and attempts.

#[path = "../common/mod.rs"]
mod common;
#[path = "../conformance/protocol.rs"]
mod protocol;

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tasker::{TestEnv, repo_root, steps_by_name};

use common::{scenarios, start_worker};

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
    let script = repo_root()
        .join("workers")
        .join(language)
        .join("conformance-client");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&script)
            .args([url, namespace])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("{} did not finish within 120 s", script.display()))??;
    anyhow::ensure!(
        out.status.success(),
        "{} failed ({}): {}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{} printed no JSON: {}",
            script.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    })
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
