//! Distributed tracing across Tasker's processes, off unless configured.
//!
//! One trace per task: `tasker.task.create` (the API call that created it), then for each step
//! `tasker.step.dispatch` (its message published), `tasker.step.handler` (a worker ran it, in
//! whatever language), `tasker.step.result` (its result published) and `tasker.step.commit`
//! (the orchestrator applied it). The spans cross processes as W3C trace context
//! (`traceparent`): the task keeps its own, each step message carries its dispatch span's and
//! each result its result span's. (In the message bodies rather than AMQP headers: one message
//! carries many steps or results.)
//!
//! [`init`] exports spans over OTLP/HTTP when `telemetry.otlp_endpoint` is set; [`install`] puts
//! any tracer provider in place (a test's in-memory exporter). Until then every call here is a
//! no-op that costs an atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

mod counted;

pub use counted::{EXPORT_ERRORS, SPANS_DROPPED};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Tracing could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("telemetry: cannot export to {endpoint}: {reason}")]
pub struct Error {
    endpoint: String,
    reason: String,
}

/// Exports spans over OTLP/HTTP (protobuf) to `endpoint` (`http://collector:4318`; the
/// `/v1/traces` path is added), as `service`, when an endpoint is given; otherwise tracing
/// stays off. Keep the guard until the process ends: dropping it flushes the last spans.
pub fn init(endpoint: Option<&str>, service: &str) -> Result<Telemetry, Error> {
    let Some(endpoint) = endpoint.filter(|e| !e.is_empty()) else {
        return Ok(Telemetry(None));
    };
    // An https:// collector: the same TLS provider as the rest of Tasker.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(traces.clone())
        .build()
        .map_err(|e| Error {
            endpoint: traces.clone(),
            reason: e.to_string(),
        })?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_owned())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(counted::Counted(exporter))
        .with_resource(resource)
        .build();
    install(provider.clone());
    tracing::info!(endpoint = %traces, service, "exporting traces over OTLP");
    Ok(Telemetry(Some(provider)))
}

/// Tracing set up by [`init`]; flushes the last spans and stops exporting when dropped.
#[derive(Debug)]
#[must_use = "dropping it stops tracing"]
pub struct Telemetry(Option<SdkTracerProvider>);

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "flushing the last spans failed");
        }
    }
}

/// Makes `provider` the process's tracer provider and turns Tasker's spans on.
pub fn install(provider: SdkTracerProvider) {
    global::set_tracer_provider(provider);
    ENABLED.store(true, Ordering::Release);
}

/// Whether spans are recorded.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// One of Tasker's spans. Ends when dropped, or at [`Span::end_at`].
#[derive(Debug)]
pub struct Span {
    cx: Context,
}

impl Span {
    /// Starts `name` now, as a child of the span whose W3C `traceparent` is given (a new trace
    /// without one), with `attributes`. `None` when tracing is off.
    pub fn start(
        name: &'static str,
        parent: Option<&str>,
        attributes: Vec<KeyValue>,
    ) -> Option<Span> {
        Self::start_at(name, parent, attributes, None)
    }

    /// [`Span::start`] with the time it began, when that was earlier than now.
    pub fn start_at(
        name: &'static str,
        parent: Option<&str>,
        attributes: Vec<KeyValue>,
        at: Option<SystemTime>,
    ) -> Option<Span> {
        if !enabled() {
            return None;
        }
        let parent = parent.map_or_else(Context::new, context_of);
        let tracer = global::tracer("tasker");
        let mut builder = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes);
        if let Some(at) = at {
            builder = builder.with_start_time(at);
        }
        let span = builder.start_with_context(&tracer, &parent);
        Some(Span {
            cx: parent.with_span(span),
        })
    }

    /// This span as W3C trace context, for a child in another process.
    pub fn traceparent(&self) -> String {
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&self.cx, &mut carrier);
        carrier.remove("traceparent").unwrap_or_default()
    }

    /// Adds an attribute.
    pub fn set(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// Marks it failed, with why.
    pub fn fail(&self, why: String) {
        self.cx.span().set_status(Status::error(why));
    }

    /// Ends it at `at` (a transaction's commit, measured before the span was made).
    pub fn end_at(self, at: SystemTime) {
        self.cx.span().end_with_timestamp(at);
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        // A no-op if `end_at` ended it already.
        self.cx.span().end();
    }
}

/// The context a W3C `traceparent` names (an empty one if it is not one).
fn context_of(traceparent: &str) -> Context {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    TraceContextPropagator::new().extract(&carrier)
}

/// An attribute (re-exported so callers need no OpenTelemetry crate of their own).
pub fn attr(key: &'static str, value: impl Into<opentelemetry::Value>) -> KeyValue {
    KeyValue::new(key, value)
}

pub use opentelemetry::KeyValue as Attribute;
