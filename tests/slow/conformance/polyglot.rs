//! The four languages' workers together: on one broker each runs only its own namespace's
//! steps; one workflow spans the four, and the workers registry sees them come and go.

use std::time::Duration;

use anyhow::Context;
use tasker::{TestEnv, repo_root, steps_by_name};

use crate::LANGUAGES;
use crate::common::{start_worker, start_worker_on, start_worker_with};

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
