//! Events: sent to a namespace (`POST /v1/events`), stored, and matched against the `on:`
//! triggers of its templates in the transaction that starts their tasks.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{BatchStatus, ErrorDetail};

/// The body of `POST /v1/events`, and each item of `POST /v1/events:batch`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendEvent {
    pub namespace: String,
    /// 1 to 64 ASCII letters, digits, `_`, `-` and `.` (such as `order.created`).
    pub name: String,
    /// Any JSON object up to `orchestrator.max_context_bytes`; `{}` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// What the event is about (a customer, an order): 1 to 255 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The sender's own id, 1 to 255 characters: the same id in a namespace is the same event,
    /// answered again and starting nothing new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// `POST /v1/events:batch`: many events in one request and one transaction.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendEvents {
    /// At most `orchestrator.max_batch_tasks` (10,000 by default).
    pub events: Vec<SendEvent>,
}

/// A stored event and what it started.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: Uuid,
    pub namespace: String,
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub key: Option<String>,
    /// The sender's id, if it gave one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub sender_id: Option<String>,
    pub data: Value,
    pub received_at: DateTime<Utc>,
    /// One entry per template whose trigger matched it; empty when none did.
    pub started: Vec<EventStart>,
    /// The wait step that took it (`wait: {event, match}`), if one did: an event serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_by: Option<EventTaker>,
}

/// The wait step that took an event.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTaker {
    pub task_id: Uuid,
    pub step_id: Uuid,
    /// The step's name.
    pub step: String,
    pub at: DateTime<Utc>,
}

/// What an event did to one template whose trigger matched it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventStart {
    /// `namespace/name@version`.
    pub template: String,
    /// The task it started (or, `debounced` or `deduplicated`, the task that answered it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    /// The trigger's debounce answered it the task of its burst.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub debounced: bool,
    /// The trigger's dedupe window answered it the task its key started before.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub deduplicated: bool,
    /// Why it started none: the error `POST /v1/tasks` would answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<ErrorDetail>,
}

/// What `POST /v1/events:batch` did with each event, in request order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventsSent {
    pub created: usize,
    pub existing: usize,
    pub refused: usize,
    pub results: Vec<EventItem>,
}

/// One event of a batch: `created` (stored now), `existing` (its `id` was sent before) or
/// `refused` (nothing stored; `error` says why).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventItem {
    pub index: usize,
    pub status: BatchStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<Uuid>,
    /// The tasks it started (for `existing`, those it started the first time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_ids: Vec<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// A page of events, newest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    pub events: Vec<Event>,
    /// The `before` of the next page; `null` on the last.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<Uuid>,
}
