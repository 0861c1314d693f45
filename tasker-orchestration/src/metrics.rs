//! Every metric the orchestrator exports, named and described once, and the process's
//! Prometheus recorder.

use metrics::Unit;
use metrics_exporter_prometheus::PrometheusHandle;
use tasker_shared::metric::{Kind, Metric, batch_size, counter, seconds};

pub const TASKS_CREATED: Metric = counter(
    "tasker_tasks_created_total",
    "Tasks created, by namespace (a repeated idempotency key creates none).",
);
pub const TASKS_FINISHED: Metric = counter(
    "tasker_tasks_finished_total",
    "Tasks that reached a terminal state, by state.",
);
pub const TASK_SECONDS: Metric = seconds(
    "tasker_task_seconds",
    "How long finished tasks took, end to end: from their creation (a task created to start \
     later: its start time) to their terminal state, by namespace, template and state.",
);
pub const TASKS_OPEN: Metric = Metric {
    name: "tasker_tasks_open",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Tasks not yet finished, by namespace and state (scheduled, running), as of the last \
           scrape.",
};
pub const STEPS_ENQUEUED: Metric = Metric {
    name: "tasker_steps_enqueued",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Steps dispatched to workers and not yet finished (queued or running), by the \
           namespace whose workers run them, as of the last scrape.",
};
pub const STEPS_RUNNING: Metric = Metric {
    name: "tasker_steps_running",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Steps of tasker_steps_enqueued a worker reported its handler runs (those running for \
           worker.running_report_ms or longer), by namespace, as of the last scrape.",
};
pub const STEPS_RUNNING_REPORTED: Metric = counter(
    "tasker_steps_running_reported_total",
    "Step attempts workers reported running that were marked so (POST /v1/workers/{id}/running).",
);
pub const RESULTS_APPLIED: Metric = counter(
    "tasker_results_applied_total",
    "Step results that changed a step's state.",
);
pub const RESULTS_IGNORED: Metric = counter(
    "tasker_results_ignored_total",
    "Copies of step results already applied (the same attempt again, e.g. redelivered).",
);
pub const RESULTS_REJECTED: Metric = counter(
    "tasker_results_rejected_total",
    "Results that changed nothing and were dead-lettered, by reason: result_mismatch (no step \
     in flight with that task, step and attempt) or result_not_permitted (the sender may not \
     serve the step's namespace).",
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
pub const RESULT_BATCH_SIZE: Metric = batch_size(
    "tasker_result_batch_size",
    "Results applied per transaction.",
);
pub const READ_REPLICA_LAG: Metric = Metric {
    name: "tasker_read_replica_lag_bytes",
    kind: Kind::Gauge,
    unit: Unit::Bytes,
    help: "How far the replica of database.read_url is behind the primary, in bytes of WAL, as \
           this orchestrator last read both (every 50 ms); absent without a replica.",
};
pub const READ_REPLICA_SERVING: Metric = Metric {
    name: "tasker_read_replica_serving",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "1 while the replica of database.read_url serves the API's reads, 0 while it is down or \
           lags past 5 s (every read goes to the primary then); absent without a replica.",
};
pub const CREATE_BATCH_SIZE: Metric = batch_size(
    "tasker_create_batch_size",
    "Tasks created per statement by POST /v1/tasks (requests that arrive while one runs share \
     the next).",
);
pub const RESULT_CONSUME_BATCH_SIZE: Metric = batch_size(
    "tasker_result_consume_batch_size",
    "Result messages taken from the broker per batch (each may carry many results).",
);
pub const MESSAGE_STEPS: Metric = batch_size(
    "tasker_dispatch_message_batch_size",
    "Steps carried by one published step message.",
);
pub const DISPATCH_ROUND_STEPS: Metric = batch_size(
    "tasker_dispatch_round_batch_size",
    "Steps published per confirm round.",
);
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

pub const DEAD_LETTERS_KEPT: Metric = counter(
    "tasker_dead_letters_kept_total",
    "Messages taken from the dead-letter queue and kept in the dead_letters table, by origin: \
     results, steps, other or unknown.",
);
pub const DEAD_LETTERS_REPLAYED: Metric = counter(
    "tasker_dead_letters_replayed_total",
    "Dead letters published again to their queue through the API.",
);
pub const SCHEDULE_FIRES: Metric = counter(
    "tasker_schedule_fires_total",
    "Tasks started by schedules (fires, triggers and backfills), by how: fire, trigger, backfill.",
);
pub const SCHEDULE_SKIPS: Metric = counter(
    "tasker_schedule_skips_total",
    "Schedule fires skipped, by reason: overlap (the last task still open), catch_up (missed \
     longer ago than the catch-up window), template (the template or its context refused).",
);
pub const SCHEDULE_LATENESS: Metric = seconds(
    "tasker_schedule_lateness_seconds",
    "How long after its nominal time a schedule's fire started its task.",
);
pub const WAITS_STARTED: Metric = counter(
    "tasker_waits_started_total",
    "Wait steps that began waiting.",
);
pub const CHILDREN_STARTED: Metric = counter(
    "tasker_children_started_total",
    "Child tasks started by child-workflow steps (one per step attempt).",
);
pub const STEPS_UNSERVED: Metric = Metric {
    name: "tasker_steps_unserved",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Steps waiting for a worker whose namespace and handler no live worker serves, by \
           namespace, as of the last scrape.",
};
pub const WORKERS_LIVE: Metric = Metric {
    name: "tasker_workers_live",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Workers that reported within their last three heartbeats, by language, as of the \
           last scrape.",
};
pub const WAITS_ENDED: Metric = counter(
    "tasker_waits_ended_total",
    "Wait steps resolved by the orchestrator (slept, signalled or timed out).",
);
pub const SIGNALS_RECEIVED: Metric = counter(
    "tasker_signals_received_total",
    "Signals stored for tasks (a repeat of one already stored is not counted).",
);
pub const EVENTS_RECEIVED: Metric = counter(
    "tasker_events_received_total",
    "Events sent to the API, by outcome: created (stored now), existing (its sender's id was \
     sent before), refused (invalid or forbidden; nothing stored).",
);
pub const STREAM_CHUNKS: Metric = counter(
    "tasker_stream_chunks_total",
    "Stream chunks handlers emitted that this orchestrator kept (each attempt's end counts).",
);
pub const STREAM_BYTES: Metric = Metric {
    name: "tasker_stream_bytes_total",
    kind: Kind::Counter,
    unit: Unit::Bytes,
    help: "Bytes of stream chunks kept: text as UTF-8, data as JSON.",
};
pub const STREAM_CHUNKS_LEFT_OUT: Metric = counter(
    "tasker_stream_chunks_left_out_total",
    "Stream chunks not kept, by reason: refused (no such step or attempt, a namespace its \
     sender may not serve, malformed: its message was dead-lettered), copy (kept before), \
     after_end, too_large (past 1 GiB for the attempt), superseded (of a run of an attempt \
     that another run started over).",
);
pub const STREAM_LAG: Metric = seconds(
    "tasker_stream_lag_seconds",
    "From a chunk's emission in its handler to its hand-over to this orchestrator's live \
     readers.",
);
pub const STREAM_READERS: Metric = Metric {
    name: "tasker_stream_readers",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Stream readers (GET /v1/tasks/{id}/stream as events) open on this orchestrator.",
};
pub const EVENT_STARTS: Metric = counter(
    "tasker_event_starts_total",
    "Template triggers an event matched, by outcome: started (a task was created), debounced \
     (the task of its burst answered it), deduplicated (its dedupe key's task answered it) or \
     refused (its context, its key, its template's reach or its limits refused it).",
);
pub const DEADLINES_PASSED: Metric = counter(
    "tasker_deadlines_passed_total",
    "Running tasks that passed their deadline, by the action they got: fail (ended in error), \
     cancel (cancelled) or alert (left running).",
);
pub const WEBHOOKS_RECEIVED: Metric = counter(
    "tasker_webhooks_received_total",
    "Requests to webhooks (POST /v1/webhooks/{name}), by outcome: accepted (an event was stored \
     or found), bad_signature, stale_signature (signed outside the replay window), unknown (no \
     such webhook), refused (its body or its token refused it; nothing stored).",
);
pub const ALERTS_FIRED: Metric = counter(
    "tasker_alerts_fired_total",
    "Alert rules that began to fire, by the kind of their condition (failures, \
     deadline_passed, steps_waiting, schedule_skipped, dead_letters); a firing held back by the \
     suppression window counts too.",
);
pub const ALERTS_SENT: Metric = counter(
    "tasker_alerts_sent_total",
    "Deliveries of alert notices to their sinks, by sink (webhook, slack, email) and outcome: sent, \
     retried (it failed and goes again later), failed (its last try failed; given up on).",
);
pub const START_CONTROLS_HELD: Metric = counter(
    "tasker_start_controls_held_total",
    "Requests to start a task (POST /v1/tasks, a batch's items, events' triggers) that a start \
     control answered with another request's task, by outcome: debounced or deduplicated.",
);
pub const TASKS_STARTED_LATER: Metric = counter(
    "tasker_tasks_started_later_total",
    "Tasks created to start later (run_at, delay) that started.",
);
pub const STEPS_WAITING: Metric = Metric {
    name: "tasker_steps_waiting",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Wait steps waiting (for a time or a signal), as of the last scrape.",
};
pub const TASKS_SCHEDULED: Metric = Metric {
    name: "tasker_tasks_scheduled",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Tasks waiting for their start time, as of the last scrape.",
};

pub const THROTTLE_WAIT: Metric = seconds(
    "tasker_throttle_wait_seconds",
    "How long steps waited throttled before they started, by what held them: concurrency (a \
     slot), rate (a token) or paused (a paused rate key).",
);
pub const THROTTLED_WOKEN: Metric = counter(
    "tasker_throttled_woken_total",
    "Throttled steps the timer tried to start again (a slot freed, a token's time came, a pause \
     ended); those that got their limits were dispatched.",
);
pub const CONCURRENCY_DRIFT: Metric = counter(
    "tasker_concurrency_drift_total",
    "Concurrency keys whose slots the reconciler found recorded wrongly and corrected \
     (normally none).",
);
pub const RATE_LIMIT_PAUSES: Metric = counter(
    "tasker_rate_limit_pauses_total",
    "Rate keys paused by an operator.",
);
pub const SLOTS_IN_USE: Metric = Metric {
    name: "tasker_concurrency_slots_in_use",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Concurrency slots held by steps in flight, by scope (a template's or a step's \
           limit: the key before its value), as of the last scrape.",
};
pub const STEPS_THROTTLED: Metric = Metric {
    name: "tasker_steps_throttled",
    kind: Kind::Gauge,
    unit: Unit::Count,
    help: "Steps waiting throttled, by what holds them (concurrency, rate, paused), as of the \
           last scrape.",
};

pub const PURGED_TASKS: Metric = counter(
    "tasker_purged_tasks_total",
    "Finished tasks purged (retention or `tasker purge`), by state.",
);
pub const PURGED_ROWS: Metric = counter(
    "tasker_purged_rows_total",
    "Rows purged with those tasks, by table (tasks, steps, edges, transitions, signals, \
     dead_letters), and the audit log's old rows (audit_log).",
);
pub const PURGED_BYTES: Metric = Metric {
    name: "tasker_purged_bytes_total",
    kind: Kind::Counter,
    unit: Unit::Bytes,
    help: "Bytes of row data purged with those tasks (as pg_column_size counts them; indexes \
           and free space not included).",
};
pub const PURGE_BATCH: Metric = seconds(
    "tasker_purge_batch_seconds",
    "How long one purge transaction took (a batch of at most retention.batch tasks).",
);
pub const OPERATION_TASKS: Metric = counter(
    "tasker_operation_tasks_total",
    "Tasks (and dead letters) operations by filter (POST /v1/operations) reached, by action and \
     outcome: acted (retried, resolved, cancelled, replayed, discarded) or skipped (no longer in \
     a state the action takes, purged, not replayable, or outside the token's namespaces).",
);
pub const OPERATION_BATCH: Metric = seconds(
    "tasker_operation_batch_seconds",
    "How long one batch of an operation by filter took (at most operations.batch tasks).",
);
pub const TASKS_BATCH_CREATED: Metric = batch_size(
    "tasker_task_batch_size",
    "Items per bulk creation request (POST /v1/tasks:batch).",
);

pub const HTTP_REQUESTS: Metric = counter(
    "tasker_http_requests_total",
    "API requests answered, by route (its path pattern, as /v1/tasks/{id}; `unmatched` for a \
     path no route serves), method and status.",
);
pub const HTTP_SECONDS: Metric = seconds(
    "tasker_http_request_seconds",
    "How long the API took to answer (until the answer's head: a stream's life is not \
     counted; a ?wait= is), by route and method.",
);
pub const BOUNDS_REFUSED: Metric = counter(
    "tasker_bounds_refused_total",
    "Connections and requests refused by a bound of what a request may cost, by bound (its \
     configuration key: orchestrator.max_connections_per_peer, \
     orchestrator.body_min_bytes_per_second, orchestrator.max_waits_per_token, ...).",
);

pub const AUDIT_ROWS: Metric = counter(
    "tasker_audit_rows_total",
    "Requests that asked to change something, written to the audit log.",
);
pub const AUDIT_DROPPED: Metric = counter(
    "tasker_audit_dropped_total",
    "Audit rows dropped because the audit log's writer held too many unwritten (the database \
     unreachable for long); each drop is also logged as an error.",
);

/// Every metric above, described to the recorder at start-up.
pub const ALL: [Metric; 69] = [
    STREAM_CHUNKS,
    STREAM_BYTES,
    STREAM_CHUNKS_LEFT_OUT,
    STREAM_LAG,
    STREAM_READERS,
    BOUNDS_REFUSED,
    AUDIT_ROWS,
    AUDIT_DROPPED,
    TASK_SECONDS,
    TASKS_OPEN,
    STEPS_ENQUEUED,
    STEPS_RUNNING,
    STEPS_RUNNING_REPORTED,
    HTTP_REQUESTS,
    HTTP_SECONDS,
    PURGED_TASKS,
    PURGED_ROWS,
    PURGED_BYTES,
    PURGE_BATCH,
    OPERATION_TASKS,
    OPERATION_BATCH,
    TASKS_BATCH_CREATED,
    THROTTLED_WOKEN,
    THROTTLE_WAIT,
    CONCURRENCY_DRIFT,
    RATE_LIMIT_PAUSES,
    SLOTS_IN_USE,
    STEPS_THROTTLED,
    SCHEDULE_FIRES,
    SCHEDULE_SKIPS,
    SCHEDULE_LATENESS,
    WAITS_STARTED,
    CHILDREN_STARTED,
    STEPS_UNSERVED,
    WORKERS_LIVE,
    WAITS_ENDED,
    SIGNALS_RECEIVED,
    EVENTS_RECEIVED,
    EVENT_STARTS,
    WEBHOOKS_RECEIVED,
    ALERTS_FIRED,
    ALERTS_SENT,
    DEADLINES_PASSED,
    START_CONTROLS_HELD,
    TASKS_STARTED_LATER,
    STEPS_WAITING,
    TASKS_SCHEDULED,
    RESULTS_REJECTED,
    DEAD_LETTERS_KEPT,
    DEAD_LETTERS_REPLAYED,
    RESULT_CONSUME_BATCH_SIZE,
    CREATE_BATCH_SIZE,
    READ_REPLICA_LAG,
    READ_REPLICA_SERVING,
    MESSAGE_STEPS,
    DISPATCH_ROUND_STEPS,
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

/// The gauges counted from the database, whose values are the cluster's, not one
/// orchestrator's: only the longest-running live orchestrator reports them (the others leave
/// them out of `/metrics`), so a sum over every orchestrator's scrape reads the true value.
pub const CLUSTER_GAUGES: [&str; 9] = [
    STEPS_WAITING.name,
    TASKS_SCHEDULED.name,
    WORKERS_LIVE.name,
    STEPS_ENQUEUED.name,
    STEPS_RUNNING.name,
    STEPS_UNSERVED.name,
    TASKS_OPEN.name,
    STEPS_THROTTLED.name,
    SLOTS_IN_USE.name,
];

/// The process-wide handle; installs the recorder and describes every metric.
pub fn handle() -> &'static PrometheusHandle {
    tasker_shared::metric::recorder(&ALL)
}
