//! Running is a state you can see: a handler that runs past `worker.running_report_ms` is
//! reported by its worker, and its step is shown `running` with that worker and since when — in
//! the step, the task's history and `tasker_steps_running` — while it runs; a report of a step
//! that moved on, of another namespace, or by an unknown worker changes nothing, and the answer
//! names the reported attempts that are over (a worker does not run a copy of one).

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use tasker::{scrape, steps_by_name};
use tasker_client::{CreateTask, Error};
use tasker_shared::api::{RunningReport, RunningStep};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_handler_is_shown_running_on_its_worker_while_it_runs() -> anyhow::Result<()> {
    let mut env = super::env().await?;
    env.config.worker.running_report_ms = 200;
    let o = env.orchestrator().await?;
    let (worker, task) = tasker::napping(&mut env, &o, 4_000).await?;
    let nap = o
        .until(Duration::from_secs(10), "the nap shown running", || async {
            let steps = steps_by_name(&o.client, task.id).await?;
            anyhow::Ok(Some(steps["nap"].clone()).filter(|s| s.state == "running"))
        })
        .await?;
    // Seen while the handler still sleeps: the task is not over.
    let seen = chrono::Utc::now();
    assert_eq!(o.client.task(task.id, None).await?.state, "running");
    assert_eq!(nap.worker.as_deref(), Some(worker.name.as_str()));
    let started = nap.started_at.expect("started_at of a running step");
    assert!(started >= nap.dispatched_at.unwrap(), "{nap:?}");
    println!(
        "shown running {} ms after the handler started",
        (seen - started).num_milliseconds()
    );
    // `tasker show`: the run so far and where.
    let out = std::process::Command::new(tasker::workspace_binary("tasker")?)
        .args(["--url", &o.url(), "show", &task.id.to_string()])
        .stdin(std::process::Stdio::null())
        .output()?;
    let shown = String::from_utf8(out.stdout)?;
    let line = shown
        .lines()
        .find(|l| l.starts_with("nap "))
        .unwrap_or_default();
    assert!(
        line.contains(" running ") && line.contains(&format!("running on {} since", worker.name)),
        "{shown}"
    );
    let history = o.client.history(task.id).await?;
    let marks: Vec<_> = history
        .iter()
        .filter(|t| t.step.is_some() && t.to == "running")
        .collect();
    assert_eq!(marks.len(), 1, "{history:?}");
    assert_eq!(marks[0].step.as_deref(), Some("nap"));
    assert_eq!(
        marks[0].reason.as_deref(),
        Some(format!("on worker {}", worker.name).as_str())
    );
    let page = reqwest::get(format!("{}/metrics", o.url()))
        .await?
        .text()
        .await?;
    assert_eq!(
        scrape::sample(&page, "tasker_steps_running{namespace=\"rust_examples\"}"),
        Some(1.0),
        "{page}"
    );
    // It completes as any step does; the running mark is gone with its state.
    let done = o.wait(task.id).await?;
    assert_eq!((done.state.as_str(), done.open_steps), ("complete", 0));
    let nap = &steps_by_name(&o.client, task.id).await?["nap"];
    assert_eq!(nap.state, "completed");
    assert!(nap.finished_at.unwrap() > started);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_report_moves_only_steps_in_flight_that_its_worker_serves() -> anyhow::Result<()>
{
    let env = super::env().await?;
    let o = env.orchestrator().await?;
    // No worker runs the steps: they stay enqueued, as a worker holding them would see them.
    let task = o
        .client
        .create_task(
            &CreateTask::new("rust_examples", "family_grandchild")
                .context(json!({"value": 2, "sleep_ms": 0})),
        )
        .await?;
    let steps = o
        .until(Duration::from_secs(10), "both steps enqueued", || async {
            let steps = steps_by_name(&o.client, task.id).await?;
            anyhow::Ok(Some(steps).filter(|s| s.values().all(|s| s.state == "enqueued")))
        })
        .await?;
    let report = |step: &tasker_client::Step, attempt: i32| RunningReport {
        steps: vec![RunningStep {
            step_id: step.id,
            attempt,
            started_at: chrono::Utc::now(),
        }],
    };
    // An unknown worker: 404, nothing marked.
    match o
        .client
        .report_running(Uuid::now_v7(), &report(&steps["nap"], 1))
        .await
    {
        Err(Error::Api {
            status: 404, code, ..
        }) => assert_eq!(code, "worker_not_found"),
        other => panic!("expected 404 worker_not_found, got {other:?}"),
    }
    // A worker of another namespace: its report of this namespace's step marks nothing.
    let elsewhere = Uuid::now_v7();
    let mut other = tasker::worker_report("elsewhere", &["sleep"]);
    other.namespaces = vec!["other_team".into()];
    o.client.report_worker(elsewhere, &other).await?;
    let answer = o
        .client
        .report_running(elsewhere, &report(&steps["nap"], 1))
        .await?;
    assert_eq!(answer.recorded, 0);
    assert_eq!(
        answer.over,
        Vec::<Uuid>::new(),
        "nothing said of another's namespace"
    );
    // This namespace's worker: an attempt the step is not at marks nothing; its own does, once.
    let here = Uuid::now_v7();
    o.client
        .report_worker(here, &tasker::worker_report("here", &["sleep"]))
        .await?;
    let stale = o
        .client
        .report_running(here, &report(&steps["nap"], 7))
        .await?;
    assert_eq!(stale.recorded, 0);
    assert_eq!(stale.over, vec![steps["nap"].id], "not the step's attempt");
    assert_eq!(
        steps_by_name(&o.client, task.id).await?["nap"].state,
        "enqueued"
    );
    let marked = o
        .client
        .report_running(here, &report(&steps["nap"], 1))
        .await?;
    assert_eq!(marked.recorded, 1);
    assert!(marked.over.is_empty(), "{marked:?}");
    let again = o
        .client
        .report_running(here, &report(&steps["nap"], 1))
        .await?;
    assert_eq!(again.recorded, 0, "a repeat is not marked twice");
    let now = steps_by_name(&o.client, task.id).await?;
    assert_eq!(
        (now["nap"].state.as_str(), now["nap"].worker.as_deref()),
        ("running", Some("here"))
    );
    assert_eq!(now["double"].state, "enqueued");
    // A cancel ends it: no longer shown running.
    o.client.cancel(task.id).await?;
    let ended = steps_by_name(&o.client, task.id).await?;
    assert_eq!(ended["nap"].state, "cancelled");
    let task = o.client.task(task.id, None).await?;
    assert_eq!((task.state.as_str(), task.open_steps), ("cancelled", 0));
    // Its attempt is over: a worker handed a copy of it now is told so, and nothing is marked.
    let late = o
        .client
        .report_running(here, &report(&steps["nap"], 1))
        .await?;
    assert_eq!((late.recorded, late.over), (0, vec![steps["nap"].id]));
    // Bad bodies are refused.
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/workers/{here}/running", o.url()))
        .header("content-type", "application/json")
        .body(r#"{"steps": [{"step_id": "nope", "attempt": 1}]}"#)
        .send()
        .await?;
    assert_eq!(resp.status().as_u16(), 400);
    o.stop().await;
    env.cleanup().await
}
