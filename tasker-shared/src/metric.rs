//! Metrics: each crate declares its metrics once as [`Metric`] values (name, kind, unit, help),
//! and every component of a process — an orchestrator, a worker, both in one test process —
//! reports to the one Prometheus recorder [`recorder`] installs.

use std::sync::OnceLock;

use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// A metric's name, kind, unit and help text.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    pub help: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// A counter of events.
pub const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Counter,
        unit: Unit::Count,
        help,
    }
}

/// A histogram of how many items one batch carried (name ends in `_batch_size`).
pub const fn batch_size(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Histogram,
        unit: Unit::Count,
        help,
    }
}

/// A histogram of durations in seconds (name ends in `_seconds`).
pub const fn seconds(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help,
    }
}

/// Bucket bounds of every `_seconds` histogram: from 100 µs (a Rust handler) to ten minutes.
const SECONDS_BUCKETS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
    30.0, 120.0, 600.0,
];

/// Bucket bounds of every `_batch_size` histogram: powers of two up to 4096.
const BATCH_BUCKETS: [f64; 13] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0,
];

/// What every process that traces exports, whichever it is (`tasker-telemetry`'s OTLP
/// exporter counts them): described by [`recorder`] for all.
pub const SHARED: [Metric; 2] = [
    counter(
        "tasker_otlp_export_errors_total",
        "Exports of spans over OTLP that failed (the collector unreachable or refusing); each is \
         also logged as a warning.",
    ),
    counter(
        "tasker_otlp_spans_dropped_total",
        "Spans those failed exports dropped.",
    ),
];

/// The process's Prometheus handle: installs the recorder on first use, and describes
/// `metrics` (each caller its own) and [`SHARED`] every time.
pub fn recorder(metrics: &[Metric]) -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    let handle = HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_batch_size".into()), &BATCH_BUCKETS)
            .expect("bucket bounds are not empty")
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
            .expect("bucket bounds are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
        }
        handle
    });
    for m in metrics.iter().chain(&SHARED) {
        // Described, and registered without a label: every family is on the page from the start
        // (at zero, an empty histogram), not after its first event, so a query or an alert on
        // it reads 0 rather than nothing. Registering adds nothing to a value already there.
        match m.kind {
            Kind::Counter => {
                metrics::describe_counter!(m.name, m.unit, m.help);
                metrics::counter!(m.name).increment(0);
            }
            Kind::Gauge => {
                metrics::describe_gauge!(m.name, m.unit, m.help);
                metrics::gauge!(m.name).increment(0.0);
            }
            Kind::Histogram => {
                metrics::describe_histogram!(m.name, m.unit, m.help);
                let _registered = metrics::histogram!(m.name);
            }
        }
    }
    handle
}

/// The Prometheus page of this process: its metrics, and its own `process_*` families (CPU
/// seconds, resident and virtual memory, open and maximum file descriptors, threads, start
/// time), read at each scrape.
pub fn render(handle: &PrometheusHandle) -> String {
    static PROCESS: OnceLock<metrics_process::Collector> = OnceLock::new();
    PROCESS
        .get_or_init(|| {
            let collector = metrics_process::Collector::default();
            collector.describe();
            collector
        })
        .collect();
    handle.render()
}

/// Checks a crate's metric declarations: unique names, a `tasker_` prefix, counters (and only
/// counters) ending in `_total`, histograms of batch sizes ending in `_batch_size`.
pub fn check(all: &[Metric]) -> Result<(), String> {
    let mut names: Vec<&str> = all.iter().map(|m| m.name).collect();
    names.sort();
    names.dedup();
    if names.len() != all.len() {
        return Err("a metric name is declared twice".into());
    }
    for m in all {
        if !m.name.starts_with("tasker_") {
            return Err(format!("{} lacks the tasker_ prefix", m.name));
        }
        if (m.kind == Kind::Counter) != m.name.ends_with("_total") {
            return Err(format!(
                "{}: counters, and only counters, end in _total",
                m.name
            ));
        }
    }
    Ok(())
}
