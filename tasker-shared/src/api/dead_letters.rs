//! Dead letters: what the API shows of a message no one could process.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A message no one could process, as listed: everything but its body and headers.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterInfo {
    pub id: i64,
    /// The queue it was taken from, if known.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub queue: Option<String>,
    pub reason: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub task_id: Option<Uuid>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub step_id: Option<Uuid>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// How often the same message from the same queue was dead-lettered.
    pub times_seen: i32,
    /// The body's size.
    pub bytes: i32,
    /// The broker user that sent it, as RabbitMQ validated it (`null`: none, so replaying it
    /// can move nothing).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub sender: Option<String>,
    /// The namespaces of the tasks its entries name (`null`: one names no task; then only a
    /// token of every namespace sees it).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub namespaces: Option<Vec<String>>,
}

/// One page of dead letters, newest first; `next_before` is the `before` of the next page.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterPage {
    pub dead_letters: Vec<DeadLetterInfo>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_before: Option<i64>,
}

/// A dead letter with its AMQP headers and its body: `body` when the body is JSON, else
/// `body_text` when it is UTF-8, else `body_base64`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    #[serde(flatten)]
    pub info: DeadLetterInfo,
    pub headers: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
}

/// A dead letter published again to the queue it came from.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replayed {
    pub replayed: i64,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub queue: Option<String>,
}
