//! Errors: the body every refusal answers, and every code it may carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every error answer: `{"error": {"code", "message", "details"?}}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// Every error `code` the API answers with (the OpenAPI document's `ErrorCode` enum; each
/// operation's responses say which of them it may give). The orchestrator refuses, in debug
/// builds, to answer with a code missing here.
pub const ERROR_CODES: &[&str] = &[
    "alert_not_found",
    "backfill_too_large",
    "bad_body",
    "bad_signature",
    "batch_too_large",
    "body_too_large",
    "body_too_slow",
    "broker_unavailable",
    "concurrency_key_missing",
    "concurrency_key_too_long",
    "context_filter_too_large",
    "context_schema_violation",
    "context_too_large",
    "cross_origin",
    "dead_letter_not_found",
    "deduplicated",
    "duplicate_idempotency_key",
    "empty_batch",
    "event_not_found",
    "forbidden",
    "host_not_allowed",
    "idempotency_key_reused",
    "internal",
    "invalid_action",
    "invalid_alert",
    "invalid_by",
    "invalid_catch_up",
    "invalid_context",
    "invalid_context_filter",
    "invalid_cron",
    "invalid_deadline",
    "invalid_debounce",
    "invalid_dedupe",
    "invalid_delay",
    "invalid_event_data",
    "invalid_event_id",
    "invalid_event_key",
    "invalid_event_name",
    "invalid_expiry",
    "invalid_filter",
    "invalid_id",
    "invalid_id_prefix",
    "invalid_idempotency_key",
    "invalid_json",
    "invalid_limit",
    "invalid_name",
    "invalid_namespaces",
    "invalid_note",
    "invalid_older_than",
    "invalid_path",
    "invalid_query",
    "invalid_range",
    "invalid_report",
    "invalid_result",
    "invalid_run_at",
    "invalid_schedule",
    "invalid_scope",
    "invalid_signal_id",
    "invalid_signal_name",
    "invalid_state",
    "invalid_template",
    "invalid_time",
    "invalid_timezone",
    "invalid_until",
    "invalid_wait",
    "invalid_webhook",
    "invalid_worker",
    "method_not_allowed",
    "missing_result",
    "no_such_route",
    "not_replayable",
    "operation_finished",
    "operation_not_found",
    "query_timeout",
    "rate_key_owned",
    "rate_limit_key_missing",
    "rate_limit_key_too_long",
    "rate_limited",
    "schedule_not_found",
    "signal_conflict",
    "signal_too_large",
    "stale_signature",
    "start_key_missing",
    "step_not_failed",
    "step_not_found",
    "task_finished",
    "task_not_failed",
    "task_not_found",
    "task_not_running",
    "task_purged",
    "template_version_conflict",
    "test_clock_off",
    "token_name_taken",
    "token_not_found",
    "too_many_backfills",
    "too_many_connections",
    "too_many_requests",
    "too_many_schedules",
    "too_many_signals",
    "too_many_streams",
    "too_many_tasks",
    "too_many_waits",
    "unauthenticated",
    "unknown_child_template",
    "unknown_rate_limit",
    "unknown_template",
    "unsupported_media_type",
    "webhook_not_found",
    "worker_not_found",
];

/// What went wrong: a stable `code` to match on, a message for people, sometimes details.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Stable: `task_not_found`, `invalid_context`, `idempotency_key_reused`, … (the enum of
    /// every code; a client should still expect codes a newer server adds).
    #[cfg_attr(feature = "openapi", schema(value_type = ErrorCode))]
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// An error's stable `code`: one of [`ERROR_CODES`] (a client should still expect codes
/// a newer server adds).
#[cfg(feature = "openapi")]
#[derive(Debug)]
pub struct ErrorCode;

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "Every error code the API answers with; each operation's responses say which \
                 of them it may give.",
            ))
            .enum_values(Some(ERROR_CODES.iter().copied()))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ErrorCode {}
