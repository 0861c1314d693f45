//! The bounds of what a request may cost, checked when the configuration loads.

use super::{Error, OrchestratorConfig};

/// Each bound must leave room to work: a zero would refuse every request.
pub(super) fn validate(o: &OrchestratorConfig) -> Result<(), Error> {
    let at_least_one: [(&'static str, u64); 14] = [
        ("orchestrator.steps_per_message", o.steps_per_message as u64),
        ("orchestrator.max_child_tasks", o.max_child_tasks as u64),
        ("orchestrator.result_batch_max", o.result_batch_max as u64),
        ("orchestrator.result_appliers", o.result_appliers as u64),
        ("orchestrator.body_deadline_ms", o.body_deadline_ms),
        (
            "orchestrator.max_connections_per_peer",
            o.max_connections_per_peer as u64,
        ),
        (
            "orchestrator.max_requests_per_token",
            o.max_requests_per_token as u64,
        ),
        (
            "orchestrator.max_waits_per_token",
            o.max_waits_per_token as u64,
        ),
        (
            "orchestrator.template_parse_budget_ms",
            o.template_parse_budget_ms,
        ),
        (
            "orchestrator.max_context_filter_bytes",
            o.max_context_filter_bytes as u64,
        ),
        ("orchestrator.list_timeout_ms", o.list_timeout_ms),
        (
            "orchestrator.max_schedules_per_namespace",
            o.max_schedules_per_namespace as u64,
        ),
        (
            "orchestrator.max_backfills_per_hour",
            u64::from(o.max_backfills_per_hour),
        ),
        (
            "orchestrator.max_signals_per_task",
            o.max_signals_per_task as u64,
        ),
    ];
    for (key, value) in at_least_one {
        if value == 0 {
            return Err(Error::Invalid {
                key,
                problem: "must be at least 1".into(),
            });
        }
    }
    if o.result_appliers > 16 || o.result_appliers >= o.db_max_connections as usize {
        return Err(Error::Invalid {
            key: "orchestrator.result_appliers",
            problem: "must be at most 16, and less than db_max_connections (each holds one)".into(),
        });
    }
    if o.list_timeout_ms > 600_000 {
        return Err(Error::Invalid {
            key: "orchestrator.list_timeout_ms",
            problem: "must be at most 600000 (ten minutes)".into(),
        });
    }
    Ok(())
}
