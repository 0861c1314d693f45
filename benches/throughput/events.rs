//! Events at scale (`TASKER_BENCH_FILTER=events`): 10,000 `order.created` events in one
//! `POST /v1/events:batch`, each matching the trigger of one template (`rust_examples/
//! on_order`, the four `linear` steps) and so starting one task, three times: each request's
//! time, beside the same 10,000 tasks created directly in one `POST /v1/tasks:batch` in the
//! same run (the floor an event batch builds on: the tasks are the same rows and messages);
//! and the time until the last task an event batch started completed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use tasker_client::{CreateTask, SendEvent};

use super::Stack;

const BATCH: usize = 10_000;

const ON_ORDER: &str = "namespace: rust_examples
name: on_order
version: 1.0.0
description: the linear chain, started by order.created events
on:
  - event: order.created
    if: {/data/value: {type: integer}}
    context: {value: /data/value}
steps:
  - name: double
    handler: double
  - name: add_ten
    handler: add_ten
    depends_on: [double]
  - name: square
    handler: square
    depends_on: [add_ten]
  - name: halve
    handler: halve
    depends_on: [square]
";

async fn once(stack: &Stack, run: usize) -> anyhow::Result<Value> {
    let events: Vec<SendEvent> = (0..BATCH)
        .map(|i| SendEvent {
            namespace: "rust_examples".into(),
            name: "order.created".into(),
            data: Some(json!({ "value": i % 1000 })),
            key: Some(format!("customer-{}", i % 97)),
            id: Some(format!("bench-{run}-{i}")),
        })
        .collect();
    let started = Instant::now();
    let sent = stack.client.send_events(events).await?;
    let events_s = started.elapsed().as_secs_f64();
    anyhow::ensure!(sent.created == BATCH, "stored {} of {BATCH}", sent.created);
    let tasks: Vec<_> = sent
        .results
        .iter()
        .flat_map(|r| r.task_ids.clone())
        .collect();
    anyhow::ensure!(tasks.len() == BATCH, "{} tasks started", tasks.len());
    // The floor in the same run: the same tasks, created directly.
    let items: Vec<CreateTask> = (0..BATCH)
        .map(|i| {
            CreateTask::new("rust_examples", "on_order")
                .context(json!({ "value": i % 1000 }))
                .idempotency_key(format!("bench-direct-{run}-{i}"))
        })
        .collect();
    let direct = Instant::now();
    stack.client.create_tasks(&items).await?;
    let tasks_s = direct.elapsed().as_secs_f64();
    for id in &tasks {
        let state = stack.done.wait(*id, Duration::from_secs(300)).await?;
        anyhow::ensure!(state == "complete", "task {id} ended {state}");
    }
    let all_done_s = started.elapsed().as_secs_f64();
    println!(
        "events batch {BATCH}: request {events_s:.3} s (the same tasks by tasks:batch {tasks_s:.3} s), \
         all complete {all_done_s:.1} s"
    );
    Ok(
        json!({"events": BATCH, "request_s": events_s, "tasks_batch_s": tasks_s,
              "all_complete_s": all_done_s}),
    )
}

/// `TASKER_EVENTS_RUNS` (3) batches; a run that fails is reported as failed, not fatal.
pub(super) async fn run(stack: &Stack) -> Value {
    if let Err(e) = stack
        .client
        .register_template(ON_ORDER, Some("on_order.yaml"), Some("bench"))
        .await
    {
        return json!({"failed": format!("registering on_order: {e:#}")});
    }
    let runs_wanted: usize = std::env::var("TASKER_EVENTS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut runs = Vec::new();
    for run in 0..runs_wanted {
        runs.push(
            once(stack, run)
                .await
                .unwrap_or_else(|e| json!({"failed": format!("{e:#}")})),
        );
    }
    json!({"batch": runs})
}
