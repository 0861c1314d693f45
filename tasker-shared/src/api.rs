//! The REST API's wire types, declared once: the orchestrator serializes them, `tasker-client`
//! deserializes them, and the orchestrator's OpenAPI document (`/openapi.json`) describes them
//! (feature `openapi`). The store reads the row types straight into them (feature `sqlx`).

#[cfg(feature = "openapi")]
pub mod schema_only;

mod alerts;
mod audit;
mod batch;
mod clock;
mod dead_letters;
mod errors;
mod events;
mod limits;
mod operations;
mod ops;
mod replay;
mod retention;
mod schedules;
mod signals;
mod streams;
mod tasks;
mod templates;
mod tokens;
mod webhooks;
mod workers;

pub use alerts::{Alert, AlertCondition, AlertKind, AlertList, AlertNotice, AlertSink, PutAlert};
pub use audit::{AuditEntry, AuditPage};
pub use batch::{BatchCreated, BatchItem, BatchStatus, CreateTasks};
pub use clock::{AdvanceClock, Clock, Skipped};
pub use dead_letters::{DeadLetter, DeadLetterInfo, DeadLetterPage, Replayed};
pub use errors::{ERROR_CODES, ErrorBody, ErrorDetail};
pub use events::{
    Event, EventItem, EventPage, EventStart, EventTaker, EventsSent, SendEvent, SendEvents,
};
pub use limits::{
    ConcurrencyLimit, ConcurrencyLimitList, PauseRateLimit, RateLimit, RateLimitList,
};
pub use operations::{Operation, OperationCount, OperationFilter, OperationList, StartOperation};
pub use ops::Readiness;
pub use replay::{InputsRetry, StepInputs};
pub use retention::{PurgeRequest, Purged, RetentionPolicy};
pub use schedules::{Backfill, Backfilled, PauseSchedule, Schedule, ScheduleChanges, ScheduleList};
pub use signals::{SendSignal, Signal, SignalList};
pub use streams::{StreamChunk, StreamPage};
pub use tasks::{
    ChildLink, CreateTask, History, ParentResults, RepairNote, Resolve, Step, StepPage, Task,
    TaskCounts, TaskDeadline, TaskPage, Transition,
};
#[cfg(feature = "openapi")]
pub use tasks::{StepStateName, TaskStateName};
pub use templates::{RegisteredTemplate, TemplateList};
pub use tokens::{CreatedToken, NewToken, TokenInfo, TokenList};
pub use webhooks::{PutWebhook, Webhook, WebhookFormat, WebhookList};
pub use workers::{
    RunningRecorded, RunningReport, RunningStep, UnservedStep, WorkerInfo, WorkerList, WorkerReport,
};
