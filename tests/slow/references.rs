//! What a step message carries by reference — a large task context, the parent results of a
//! step with many parents — reaches the handler complete, in Rust and through an FFI worker;
//! parent results page without gaps or repeats; size limits answer with clear errors.

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeSet;

use serde_json::json;
use uuid::Uuid;

use tasker::{RunningOrchestrator, TestEnv};
use tasker_client::{Client, CreateTask, Error};

/// Thresholds low enough that the fixtures' tasks travel by reference.
async fn start() -> anyhow::Result<(TestEnv, RunningOrchestrator)> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.inline_max_bytes = 256;
    env.config.orchestrator.inline_max_parents = 4;
    env.config.orchestrator.max_context_bytes = 16 * 1024;
    let orchestrator = env.orchestrator().await?;
    env.config.worker.orchestrator_url = orchestrator.url();
    Ok((env, orchestrator))
}

/// The worker counter of references fetched, from Prometheus text.
fn fetched(metrics: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with("tasker_worker_references_fetched_total"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// How many references the in-process worker core fetched.
fn references_fetched() -> f64 {
    fetched(&tasker_worker::metrics::handle().render())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_context_and_many_parent_results_reach_the_rust_handler() -> anyhow::Result<()> {
    let (env, o) = start().await?;
    let worker = env.rust_worker();
    let before = references_fetched();

    // The context (over 256 bytes of JSON) travels by reference; the handlers need its `value`.
    let task = o
        .run_task(
            "rust_examples",
            "linear",
            json!({"value": 6, "pad": "x".repeat(2_000)}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(task.result, Some(json!({"halve": {"value": 242}})));
    let after_context = references_fetched();
    assert!(after_context >= before + 1.0, "the context was not fetched");

    // 30 batches: the convergence step has 30 parents (over 4), read page by page.
    let task = o
        .run_task(
            "rust_examples",
            "batch_numbers",
            json!({"count": 30, "batch_size": 1}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    let total = &task.result.as_ref().unwrap()["total"];
    assert_eq!(total["sum"], (0..30).sum::<u64>());
    assert_eq!(total["batches"], 30);
    assert!(
        references_fetched() > after_context,
        "the parent results were not fetched"
    );

    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_context_reaches_a_python_handler() -> anyhow::Result<()> {
    let (env, o) = start().await?;
    let python = common::start_worker(&env, "python", "py-references", &o.url()).await?;
    let task = o
        .run_task(
            "python_examples",
            "linear",
            json!({"value": 6, "pad": "x".repeat(2_000)}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(task.result, Some(json!({"halve": {"value": 242}})));
    // The worker core fetched it (its own counter, on its health port).
    let metrics = reqwest::get(format!("http://{}/metrics", python.health))
        .await?
        .text()
        .await?;
    assert!(
        fetched(&metrics) >= 1.0,
        "the Python worker fetched no context:\n{metrics}"
    );
    o.stop().await;
    env.cleanup().await
}

/// Runs `batch_numbers` over 23 batches to completion: the task's id and its convergence
/// step's id (24 parents: `split` and `sum#0` … `sum#22`).
async fn sum_of_23_batches(o: &RunningOrchestrator) -> anyhow::Result<(Uuid, Uuid)> {
    let task = o
        .run_task(
            "rust_examples",
            "batch_numbers",
            json!({"count": 23, "batch_size": 1}),
        )
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    let total = o
        .client
        .steps(task.id)
        .await?
        .into_iter()
        .find(|s| s.name == "total")
        .expect("the convergence step");
    Ok((task.id, total.id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_results_page_without_gaps_or_repeats() -> anyhow::Result<()> {
    let (env, o) = start().await?;
    let worker = env.rust_worker();
    let (task, total) = sum_of_23_batches(&o).await?;
    let (mut seen, mut after, mut pages) = (BTreeSet::new(), None, 0);
    loop {
        let page = o.client.parent_results(task, total, after, 5).await?;
        pages += 1;
        for (name, result) in &page.parent_results {
            if name == "split" {
                assert!(result.get("batches").is_some(), "{result}");
            } else {
                assert!(name.starts_with("sum#"), "{name}");
                assert!(result.get("sum").is_some(), "{result}");
            }
            assert!(seen.insert(name.clone()), "{name} came twice");
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    // The batchable step and its 23 batches.
    assert_eq!(seen.len(), 24);
    assert_eq!(pages, 5, "pages of 5 for 24 parents");

    // A step of another task, and a bad limit, are refused.
    match o
        .client
        .parent_results(Uuid::now_v7(), total, None, 5)
        .await
    {
        Err(Error::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (404, "step_not_found"))
        }
        other => panic!("expected 404 step_not_found, got {other:?}"),
    }
    match o.client.parent_results(task, total, None, 0).await {
        Err(Error::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (400, "invalid_query"))
        }
        other => panic!("expected 400 invalid_query, got {other:?}"),
    }
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_parent_results_ends_at_its_byte_budget() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.inline_max_parents = 4;
    env.config.orchestrator.parent_page_bytes = 64;
    let o = env.orchestrator().await?;
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let (task, total) = sum_of_23_batches(&o).await?;
    // The count limit never cuts here: only the 64-byte budget does.
    let (mut seen, mut after, mut pages) = (BTreeSet::new(), None, 0);
    loop {
        let page = o.client.parent_results(task, total, after, 5_000).await?;
        pages += 1;
        let names: Vec<&String> = page.parent_results.keys().collect();
        if names.iter().any(|n| *n == "split") {
            // Over the budget alone (23 batches): a page of its own.
            assert_eq!(
                names.len(),
                1,
                "the batchable result shares a page: {names:?}"
            );
        } else {
            // Each batch sum is at least 16 bytes of JSON: a page ends by its fifth.
            assert!((1..=5).contains(&names.len()), "a page of {}", names.len());
        }
        for name in names {
            assert!(seen.insert(name.clone()), "{name} came twice");
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen.len(), 24, "every parent once");
    assert!(
        pages >= 6,
        "24 results in {pages} pages of at most 64 bytes"
    );
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// A task's steps page like parent results: each step once, in id order, a page cut by its
/// size or its limit; bad cursors and limits get 400, an unknown task 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_steps_page_without_gaps_or_repeats_within_their_byte_budget() -> anyhow::Result<()>
{
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.parent_page_bytes = 64;
    let o = env.orchestrator().await?;
    env.config.worker.orchestrator_url = o.url();
    let worker = env.rust_worker();
    let (task, _) = sum_of_23_batches(&o).await?;
    let (mut seen, mut after, mut pages, mut last) = (BTreeSet::new(), None, 0, None);
    loop {
        let page = o.client.steps_page(task, after, 4).await?;
        pages += 1;
        assert!(
            (1..=4).contains(&page.steps.len()),
            "a page of {}",
            page.steps.len()
        );
        for step in &page.steps {
            assert!(last < Some(step.id), "out of id order");
            last = Some(step.id);
            assert!(seen.insert(step.id), "{} came twice", step.name);
        }
        // `split`'s result alone is over 64 bytes: nothing follows it on its page.
        if let Some(i) = page.steps.iter().position(|s| s.name == "split") {
            assert_eq!(i, page.steps.len() - 1, "a step after the budget ran out");
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let all = o.client.steps(task).await?;
    assert_eq!(all.len(), 25, "split, 23 batches and total");
    assert_eq!(seen, all.iter().map(|s| s.id).collect(), "every step once");
    assert!(pages >= 7, "25 steps in {pages} pages of at most 4");

    for (result, expected) in [
        (
            o.client.steps_page(task, None, 0).await,
            (400, "invalid_query"),
        ),
        (
            o.client.steps_page(Uuid::now_v7(), None, 10).await,
            (404, "task_not_found"),
        ),
    ] {
        match result {
            Err(Error::Api { status, code, .. }) => assert_eq!((status, code.as_str()), expected),
            other => panic!("expected {expected:?}, got {other:?}"),
        }
    }
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// In every language, a convergence step whose parent results are more than one page reads
/// them page by page: each page once, the same totals as Rust's. `csv_products` over 20
/// batches with 256-byte pages; every worker runs as its own process, so its counter of
/// references fetched is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_language_reads_parent_results_over_a_page_one_page_at_a_time() -> anyhow::Result<()>
{
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.inline_max_parents = 4;
    env.config.orchestrator.parent_page_bytes = 256;
    let o = env.orchestrator().await?;
    let csv = tasker::repo_root().join("tests/fixtures/products.csv");
    let mut totals = Vec::new();
    for language in ["rust", "python", "ruby", "typescript"] {
        let worker =
            common::start_worker(&env, language, &format!("{language}-pages"), &o.url()).await?;
        let task = o
            .run_task(
                &format!("{language}_examples"),
                "csv_products",
                json!({"csv_path": csv, "batch_size": 50}),
            )
            .await?;
        assert_eq!(task.state, "complete", "{language}: {task:?}");
        let aggregate = o
            .client
            .steps(task.id)
            .await?
            .into_iter()
            .find(|s| s.name == "aggregate")
            .expect("the convergence step");
        // The pages as the worker reads them (its page limit is 2,000; only bytes cut here).
        let (mut pages, mut after) = (0, None);
        loop {
            let page = o
                .client
                .parent_results(task.id, aggregate.id, after, 2_000)
                .await?;
            pages += 1;
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert!(pages >= 10, "21 results of over 100 bytes in {pages} pages");
        let metrics = reqwest::get(format!("http://{}/metrics", worker.health))
            .await?
            .text()
            .await?;
        // The core's look at the first page (more follow, so it is not carried), then each
        // page once as the handler iterates.
        assert_eq!(
            fetched(&metrics),
            (pages + 1) as f64,
            "{language}: pages fetched, against {pages} pages"
        );
        let total = task.result.expect("a result")["aggregate"].clone();
        assert_eq!(total["rows_processed"], 1000, "{language}: {total}");
        assert_eq!(total["batches"], 20, "{language}: {total}");
        totals.push(total);
    }
    assert!(
        totals.windows(2).all(|w| w[0] == w[1]),
        "the languages disagree: {totals:#?}"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_over_the_limit_is_refused_and_creates_nothing() -> anyhow::Result<()> {
    let (env, o) = start().await?;
    let client = Client::new(&o.url());
    let refused = client
        .create_task(
            &CreateTask::new("rust_examples", "linear")
                .context(json!({"value": 1, "pad": "x".repeat(20_000)})),
        )
        .await;
    match refused {
        Err(Error::Api {
            status,
            code,
            message,
        }) => {
            assert_eq!((status, code.as_str()), (413, "context_too_large"));
            assert!(message.contains("16384"), "{message}");
        }
        other => panic!("expected 413 context_too_large, got {other:?}"),
    }
    let page = client.tasks(&Default::default()).await?;
    assert!(page.tasks.is_empty(), "nothing was created: {page:?}");
    o.stop().await;
    env.cleanup().await
}
