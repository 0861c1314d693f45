//! Every metric a worker exports on its health port's `/metrics`, named and described once.

use metrics_exporter_prometheus::PrometheusHandle;
use tasker_shared::metric::{Metric, batch_size, counter, seconds};

pub const STEPS_RECEIVED: Metric = counter(
    "tasker_worker_steps_received_total",
    "Steps received from the broker.",
);
pub const STEPS_DUPLICATE: Metric = counter(
    "tasker_worker_steps_duplicate_total",
    "Deliveries of a step attempt already running or lately ended in this worker, or that the \
     orchestrator says has ended (a redelivery, a re-send after its orchestrator died): \
     acknowledged, not run again.",
);
pub const STEPS_SUCCEEDED: Metric = counter(
    "tasker_worker_steps_succeeded_total",
    "Steps whose handler succeeded.",
);
pub const STEPS_FAILED: Metric = counter(
    "tasker_worker_steps_failed_total",
    "Steps whose handler failed (or that timed out, or arrived past their queue timeout).",
);
pub const STEPS_TIMED_OUT: Metric = counter(
    "tasker_worker_steps_timed_out_total",
    "Steps whose handler outlived its step's timeout (counted among the failed too).",
);
pub const HANDLER_DURATION: Metric = seconds(
    "tasker_worker_handler_duration_seconds",
    "How long handlers ran, from their start to their outcome (any outcome), by namespace, \
     template and handler.",
);
pub const STEP_QUEUE: Metric = seconds(
    "tasker_worker_step_queue_seconds",
    "How long steps waited between their dispatch (the orchestrator's clock) and their \
     handler's start (this worker's), by namespace, template and handler.",
);
pub const REFERENCES_FETCHED: Metric = counter(
    "tasker_worker_references_fetched_total",
    "Task contexts and parent-result sets fetched from the orchestrator for steps that carry them \
     by reference.",
);
pub const CONSUME_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_consume_batch_size",
    "Step messages taken from the broker per batch (each may carry many steps).",
);
pub const HOST_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_host_batch_size",
    "Steps handed to the handler host at once.",
);
pub const FFI_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_ffi_batch_size",
    "Steps a language binding took per call (Ruby, Python, TypeScript workers).",
);
pub const RESULT_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_result_batch_size",
    "Results published per confirm round.",
);
pub const RESULT_MESSAGE_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_result_message_batch_size",
    "Results carried by one published result message.",
);
pub const STREAM_CHUNKS: Metric = counter(
    "tasker_worker_stream_chunks_total",
    "Stream chunks handlers emitted (ctx.emit, ctx.emit_text) that the worker took.",
);
pub const STREAM_BYTES: Metric = Metric {
    name: "tasker_worker_stream_bytes_total",
    kind: tasker_shared::metric::Kind::Counter,
    unit: metrics::Unit::Bytes,
    help: "Bytes of the stream chunks taken: text as UTF-8, data as JSON.",
};
pub const STREAM_MESSAGE_BATCH_SIZE: Metric = batch_size(
    "tasker_worker_stream_message_batch_size",
    "Stream chunks carried by one published stream message.",
);

/// Every metric above.
pub const ALL: [Metric; 16] = [
    STREAM_CHUNKS,
    STREAM_BYTES,
    STREAM_MESSAGE_BATCH_SIZE,
    STEPS_RECEIVED,
    STEPS_DUPLICATE,
    STEP_QUEUE,
    REFERENCES_FETCHED,
    STEPS_SUCCEEDED,
    STEPS_FAILED,
    STEPS_TIMED_OUT,
    HANDLER_DURATION,
    CONSUME_BATCH_SIZE,
    HOST_BATCH_SIZE,
    FFI_BATCH_SIZE,
    RESULT_BATCH_SIZE,
    RESULT_MESSAGE_BATCH_SIZE,
];

/// The process-wide handle; installs the recorder and describes every metric.
pub fn handle() -> &'static PrometheusHandle {
    tasker_shared::metric::recorder(&ALL)
}
