//! Every metric the orchestrator exports, named and described once, and the process's
//! Prometheus recorder.

use std::sync::OnceLock;

use metrics::Unit;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// A metric's name, unit and help text.
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

const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Counter,
        unit: Unit::Count,
        help,
    }
}

pub const TASKS_CREATED: Metric = counter(
    "tasker_tasks_created_total",
    "Tasks created, by namespace (a repeated idempotency key creates none).",
);
pub const TASKS_FINISHED: Metric = counter(
    "tasker_tasks_finished_total",
    "Tasks that reached a terminal state, by state.",
);
pub const RESULTS_APPLIED: Metric = counter(
    "tasker_results_applied_total",
    "Step results that changed a step's state.",
);
pub const RESULTS_IGNORED: Metric = counter(
    "tasker_results_ignored_total",
    "Duplicate or stale step results (wrong attempt, step no longer in flight).",
);
pub const RESULTS_MALFORMED: Metric = counter(
    "tasker_results_malformed_total",
    "Result messages that could not be decoded; dead-lettered.",
);
pub const RESULTS_POISON: Metric = counter(
    "tasker_results_poison_total",
    "Results that could not be applied (e.g. a value the database refuses): their step failed \
     and the message was dead-lettered.",
);
pub const RESULT_BATCH_SIZE: Metric = Metric {
    name: "tasker_result_batch_size",
    kind: Kind::Histogram,
    unit: Unit::Count,
    help: "Results applied per transaction.",
};
pub const STEPS_DISPATCHED: Metric = counter(
    "tasker_steps_dispatched_total",
    "Step messages published and confirmed by the broker.",
);
pub const DISPATCH_BACKLOG: Metric = Metric {
    name: "tasker_dispatch_backlog",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Step messages waiting for a broker connection.",
};
pub const DISPATCH_DROPPED: Metric = counter(
    "tasker_dispatch_dropped_total",
    "Step messages dropped from a full dispatch backlog; the sweeper re-publishes their steps.",
);
pub const STEPS_REFUSED: Metric = counter(
    "tasker_steps_refused_total",
    "Steps failed because their message exceeded max_message_bytes.",
);
pub const SWEEPER_TIMEOUTS: Metric = counter(
    "tasker_sweeper_timeouts_total",
    "Steps the sweeper failed for running past their deadline.",
);
pub const SWEEPER_REPUBLISHED: Metric = counter(
    "tasker_sweeper_republished_total",
    "Steps the sweeper published again after the visibility timeout.",
);

/// Every metric above, described to the recorder at start-up.
pub const ALL: [Metric; 13] = [
    DISPATCH_DROPPED,
    STEPS_REFUSED,
    TASKS_CREATED,
    RESULTS_POISON,
    TASKS_FINISHED,
    RESULTS_APPLIED,
    RESULTS_IGNORED,
    RESULTS_MALFORMED,
    RESULT_BATCH_SIZE,
    STEPS_DISPATCHED,
    DISPATCH_BACKLOG,
    SWEEPER_TIMEOUTS,
    SWEEPER_REPUBLISHED,
];

/// The process-wide handle; installs the recorder and describes every metric on first use.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
        }
        for m in ALL {
            match m.kind {
                Kind::Counter => metrics::describe_counter!(m.name, m.unit, m.help),
                Kind::Gauge => metrics::describe_gauge!(m.name, m.unit, m.help),
                Kind::Histogram => metrics::describe_histogram!(m.name, m.unit, m.help),
            }
        }
        handle
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_counters_end_in_total() {
        let mut names: Vec<&str> = ALL.iter().map(|m| m.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for m in ALL {
            assert!(m.name.starts_with("tasker_"), "{}", m.name);
            assert_eq!(
                m.kind == Kind::Counter,
                m.name.ends_with("_total"),
                "{}",
                m.name
            );
        }
    }
}
