//! What the unit tests of several modules share.

/// A step message for unit tests: one attempt of handler `h`, empty context, dispatched now,
/// 10 s timeout; tests change what they need with struct update syntax.
pub(crate) fn test_message() -> tasker_shared::StepMessage {
    tasker_shared::StepMessage {
        task_id: uuid::Uuid::now_v7(),
        step_id: uuid::Uuid::now_v7(),
        namespace: "ns".into(),
        task_name: "t".into(),
        step_name: "s".into(),
        handler: "h".into(),
        attempt: 1,
        max_attempts: 1,
        context: serde_json::json!({}),
        parent_results: serde_json::Map::new(),
        context_by_reference: false,
        parent_results_by_reference: false,
        input: None,
        dispatched_at: chrono::Utc::now(),
        timeout_ms: 10_000,
        queue_timeout_ms: None,
        traceparent: None,
        priority: None,
        resent: false,
    }
}
