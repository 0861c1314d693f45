//! Every scenario of `tests/conformance/scenarios.yaml` against one language's worker, started
//! as its own process: the same results, final states and attempts in every language; steps of
//! each priority taken; a wait step signalled through the language's own client; the worker's
//! step latency metrics.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tasker::{TestEnv, steps_by_name};

use crate::common::{scenarios, start_worker};
use crate::conformance_client;

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
