//! Distributed tracing: one trace per task, from the API call that created it through each
//! step's dispatch, handler, result and commit, across processes and languages. This process's
//! spans (orchestrator, in-process Rust worker) go to an in-memory exporter; a Python worker
//! exports its own over OTLP/HTTP to a collector the test serves, as it would to a real one.

#[path = "../common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Proto;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use prost::Message;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use uuid::Uuid;

use tasker::{TestEnv, steps_by_name};
use tasker_client::Client;

/// A finished span, from either exporter.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    service: String,
    trace: String,
    span: String,
    parent: String,
    attributes: HashMap<String, String>,
    failed: bool,
}

impl Seen {
    fn attr(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

/// This process's exporter, installed once for every test here (the provider is global).
fn in_process() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        tasker_telemetry::install(provider);
        exporter
    })
}

/// The spans this process finished in `trace`.
fn finished_here(trace: TraceId) -> anyhow::Result<Vec<Seen>> {
    Ok(in_process()
        .get_finished_spans()?
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .map(|s| Seen {
            name: s.name.to_string(),
            service: "in-process".into(),
            trace: s.span_context.trace_id().to_string(),
            span: s.span_context.span_id().to_string(),
            parent: s.parent_span_id.to_string(),
            attributes: s
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect(),
            failed: matches!(s.status, opentelemetry::trace::Status::Error { .. }),
        })
        .collect())
}

/// A caller's span: the trace a task joins when its creation carries this `traceparent`.
fn caller() -> (TraceId, SpanId, String) {
    let trace = TraceId::from_bytes(*Uuid::now_v7().as_bytes());
    let span = SpanId::from_bytes(Uuid::now_v7().as_bytes()[8..].try_into().unwrap());
    (trace, span, format!("00-{trace}-{span}-01"))
}

/// Creates a task through the API with the caller's `traceparent`; returns its id.
async fn create_traced(base: &str, namespace: &str, traceparent: &str) -> anyhow::Result<Uuid> {
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/tasks"))
        .header("traceparent", traceparent)
        .json(&json!({"namespace": namespace, "name": "linear", "context": {"value": 6}}))
        .send()
        .await?;
    anyhow::ensure!(resp.status().is_success(), "{}", resp.text().await?);
    let body: Value = resp.json().await?;
    body["id"].as_str().context("no id")?.parse().context("id")
}

/// Checks the trace of a finished `linear` task: the creation is the caller's child, and each
/// of its four steps has one chain dispatch → handler → result → commit, each the child of the
/// one before, naming the step; the handler and result spans come from `worker_service`.
fn assert_one_trace(
    spans: &[Seen],
    caller_span: SpanId,
    task: Uuid,
    steps: &HashMap<String, Uuid>,
    worker_service: &str,
) {
    let named = |name: &'static str| spans.iter().filter(move |s| s.name == name);
    let create: Vec<&Seen> = named("tasker.task.create").collect();
    assert_eq!(create.len(), 1, "one creation span: {spans:#?}");
    let create = create[0];
    assert_eq!(create.parent, caller_span.to_string(), "{create:?}");
    assert_eq!(
        create.attr("tasker.task_id"),
        task.to_string(),
        "{create:?}"
    );
    assert!(
        create.attr("tasker.template").contains("linear"),
        "{create:?}"
    );
    assert!(spans.iter().all(|s| s.trace == create.trace), "{spans:#?}");

    assert_eq!(steps.len(), 4, "{steps:?}");
    for (name, step) in steps {
        let of_step = |span: &'static str| -> &Seen {
            let found: Vec<&Seen> = named(span)
                .filter(|s| s.attr("tasker.step_id") == step.to_string())
                .collect();
            assert_eq!(found.len(), 1, "one {span} span for {name}: {spans:#?}");
            found[0]
        };
        let dispatch = of_step("tasker.step.dispatch");
        let handler = of_step("tasker.step.handler");
        let result = of_step("tasker.step.result");
        let commit = of_step("tasker.step.commit");
        assert_eq!(dispatch.parent, create.span, "{dispatch:?}");
        assert_eq!(dispatch.attr("tasker.step"), name, "{dispatch:?}");
        assert_eq!(dispatch.attr("tasker.attempt"), "1", "{dispatch:?}");
        assert_eq!(handler.parent, dispatch.span, "{handler:?}");
        assert_eq!(handler.attr("tasker.step"), name, "{handler:?}");
        assert_eq!(handler.attr("tasker.outcome"), "success", "{handler:?}");
        assert_eq!(handler.service, worker_service, "{handler:?}");
        assert_eq!(result.parent, handler.span, "{result:?}");
        assert_eq!(result.service, worker_service, "{result:?}");
        assert_eq!(commit.parent, result.span, "{commit:?}");
        assert_eq!(
            commit.attr("tasker.task_id"),
            task.to_string(),
            "{commit:?}"
        );
        for s in [dispatch, handler, result, commit] {
            assert!(!s.failed, "{s:?}");
        }
    }
    assert_eq!(
        spans.len(),
        1 + 4 * 4,
        "nothing else in the trace: {spans:#?}"
    );
}

/// The steps of a task by name.
async fn step_ids(client: &Client, task: Uuid) -> anyhow::Result<HashMap<String, Uuid>> {
    Ok(steps_by_name(client, task)
        .await?
        .into_iter()
        .map(|(name, step)| (name, step.id))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_one_trace_from_its_creation_to_each_steps_commit() -> anyhow::Result<()> {
    in_process();
    let env = TestEnv::new().await?;
    let orchestrator = env.orchestrator().await?;
    let worker = env.rust_worker();
    let base = orchestrator.url();
    let (trace, caller_span, traceparent) = caller();

    let task = create_traced(&base, "rust_examples", &traceparent).await?;
    let done = orchestrator.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let steps = step_ids(&orchestrator.client, task).await?;
    // Every span has ended once the worker and the orchestrator stopped.
    worker.stop().await;
    orchestrator.stop().await;

    let spans = finished_here(trace)?;
    assert_one_trace(&spans, caller_span, task, &steps, "in-process");

    // Without trace context a task still gets a trace of its own, rooted at its creation.
    let orchestrator = env.orchestrator().await?;
    let worker = env.rust_worker();
    let task = orchestrator
        .run_task("rust_examples", "linear", json!({"value": 1}))
        .await?;
    worker.stop().await;
    orchestrator.stop().await;
    let all = in_process().get_finished_spans()?;
    let root = all
        .iter()
        .find(|s| {
            s.name == "tasker.task.create"
                && s.attributes.iter().any(|kv| {
                    kv.key.as_str() == "tasker.task_id"
                        && kv.value.to_string() == task.id.to_string()
                })
        })
        .context("the creation span of the untraced request")?;
    assert_eq!(root.parent_span_id, SpanId::INVALID, "a root: {root:?}");
    let in_trace = all
        .iter()
        .filter(|s| s.span_context.trace_id() == root.span_context.trace_id())
        .count();
    assert_eq!(in_trace, 1 + 4 * 4, "its steps joined its trace");
    env.cleanup().await
}

/// An OTLP/HTTP collector on a free port: each span it is sent, with its service's name.
async fn collector() -> anyhow::Result<(String, mpsc::UnboundedReceiver<Seen>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: Bytes| {
        let tx = tx.clone();
        async move {
            assert_eq!(uri.path(), "/v1/traces");
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
            for resource in request.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                        Proto::StringValue(s) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                    let attributes = span
                        .attributes
                        .iter()
                        .map(|kv| {
                            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                Some(Proto::StringValue(s)) => s.clone(),
                                Some(Proto::IntValue(i)) => i.to_string(),
                                other => format!("{other:?}"),
                            };
                            (kv.key.clone(), value)
                        })
                        .collect();
                    let _ = tx.send(Seen {
                        name: span.name,
                        service: service.clone(),
                        trace: hex(&span.trace_id),
                        span: hex(&span.span_id),
                        parent: if span.parent_span_id.is_empty() {
                            SpanId::INVALID.to_string()
                        } else {
                            hex(&span.parent_span_id)
                        },
                        attributes,
                        failed: span.status.is_some_and(|s| s.code == 2),
                    });
                }
            }
            Vec::<u8>::new()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, rx))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_worker_exports_its_spans_of_the_trace_over_otlp() -> anyhow::Result<()> {
    in_process();
    let (endpoint, mut received) = collector().await?;
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates.clear();
    let orchestrator = env.orchestrator().await?;
    let base = orchestrator.url();
    let mut worker = common::start_worker_with(
        &env,
        "python",
        "traced-python",
        &base,
        &[("TASKER_TELEMETRY__OTLP_ENDPOINT", &endpoint)],
    )
    .await?;
    let (trace, caller_span, traceparent) = caller();
    let task = create_traced(&base, "python_examples", &traceparent).await?;
    let done = orchestrator.wait(task).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    let steps = step_ids(&orchestrator.client, task).await?;

    // A worker flushes its last spans as it stops.
    let pid = worker.child.id().context("worker pid")?;
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    assert!(signalled.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), worker.child.wait())
        .await
        .context("the worker did not exit within 30 s of SIGTERM")??;
    assert!(exit.success(), "{exit:?}");
    orchestrator.stop().await;

    let mut spans = finished_here(trace)?;
    while let Ok(span) = received.try_recv() {
        if span.trace == trace.to_string() {
            spans.push(span);
        }
    }
    assert_one_trace(&spans, caller_span, task, &steps, "tasker-worker-python");
    env.cleanup().await
}
