//! Rust client for the Tasker REST API.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tasker_client::Error> {
//! use std::time::Duration;
//! let client = tasker_client::Client::new("http://127.0.0.1:8080");
//! let task = client
//!     .create_task(&tasker_client::CreateTask::new("rust_examples", "linear")
//!         .context(serde_json::json!({"value": 6})))
//!     .await?;
//! let done = client.task(task.id, Some(Duration::from_secs(30))).await?;
//! println!("{} {:?}", done.state, done.result);
//! # Ok(()) }
//! ```

mod alerts;
mod audit;
mod client;
mod clock;
mod dead_letters;
mod error;
mod events;
mod limits;
mod named;
mod namespace_events;
mod operations;
mod pages;
mod retention;
mod sse;
mod streams;
mod templates;
mod time;
mod wait;
mod webhooks;
mod workers;

pub use audit::AuditQuery;
pub use error::Error;
pub use events::{StepState, TaskEvents, TaskSnapshot};
pub use streams::{StreamQuery, TaskStream};
pub use time::Sent;

pub use client::{Client, ClientOptions, Registered, TaskQuery, install_crypto_provider};
pub use tasker_shared::api::{
    AdvanceClock, AuditEntry, AuditPage, Clock, InputsRetry, Skipped, StepInputs, StreamChunk,
    StreamPage,
};
pub use tasker_shared::api::{
    Alert, AlertCondition, AlertKind, AlertNotice, AlertSink, PutAlert, PutWebhook, Webhook,
    WebhookFormat,
};
pub use tasker_shared::api::{
    Backfilled, BatchCreated, BatchItem, BatchStatus, ConcurrencyLimit, CreateTask, DeadLetter,
    DeadLetterInfo, DeadLetterPage, Operation, OperationCount, OperationFilter, OperationList,
    ParentResults, PurgeRequest, Purged, RateLimit, RepairNote, RetentionPolicy, Schedule,
    ScheduleChanges, Signal, StartOperation, Step, StepPage, Task, TaskPage, Transition,
};
pub use tasker_shared::api::{Event, EventItem, EventPage, EventStart, EventsSent, SendEvent};
pub use tasker_shared::deadline::{DeadlineAction, DeadlineSpec};
pub use tasker_shared::flow::Priority;
pub use tasker_shared::start_controls::{DebounceMode, DebounceSpec, DedupeSpec};
pub use tasker_shared::time::{Overlap, ScheduleSpec};

/// A registered template version (the server's own wire type).
pub use tasker_shared::api::RegisteredTemplate as TemplateInfo;
