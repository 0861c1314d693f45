//! An OTLP exporter that says when it fails: each failed export is logged (a warning naming
//! the error and how many spans it dropped) and counted, so a dead or refusing collector is
//! seen on `/metrics` instead of failing silently.

use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Failed exports, of any process that traces (`tasker_shared::metric::SHARED` describes it).
pub const EXPORT_ERRORS: &str = "tasker_otlp_export_errors_total";
/// Spans those failed exports dropped.
pub const SPANS_DROPPED: &str = "tasker_otlp_spans_dropped_total";

/// `E`, its failures logged and counted.
#[derive(Debug)]
pub(crate) struct Counted<E>(pub(crate) E);

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.0.export(batch).await;
        if let Err(e) = &result {
            metrics::counter!(EXPORT_ERRORS).increment(1);
            metrics::counter!(SPANS_DROPPED).increment(spans);
            tracing::warn!(error = %e, spans, "exporting spans over OTLP failed; they are dropped");
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}
