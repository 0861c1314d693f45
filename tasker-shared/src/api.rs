//! The REST API's wire types, declared once: the orchestrator serializes them, `tasker-client`
//! deserializes them, and the orchestrator's OpenAPI document (`/openapi.json`) describes them
//! (feature `openapi`). The store reads the row types straight into them (feature `sqlx`).

#[cfg(feature = "openapi")]
pub mod schema_only;

mod audit;
mod batch;
mod dead_letters;
mod errors;
mod limits;
mod ops;
mod retention;
mod schedules;
mod signals;
mod tasks;
mod templates;
mod tokens;
mod workers;

pub use audit::{AuditEntry, AuditPage};
pub use batch::{CreateTasks, BatchCreated, BatchItem, BatchStatus};
pub use dead_letters::{DeadLetterInfo, DeadLetterPage, DeadLetter, Replayed};
pub use errors::{ErrorBody, ERROR_CODES, ErrorDetail};
pub use limits::{ConcurrencyLimit, ConcurrencyLimitList, RateLimit, RateLimitList, PauseRateLimit};
pub use ops::Readiness;
pub use retention::{PurgeRequest, RetentionPolicy, Purged};
pub use schedules::{Schedule, ScheduleList, ScheduleChanges, PauseSchedule, Backfill, Backfilled};
pub use signals::{Signal, SendSignal, SignalList};
#[cfg(feature = "openapi")]
pub use tasks::{StepStateName, TaskStateName};
pub use tasks::{
    ChildLink, CreateTask, History, ParentResults, RepairNote, Resolve, Step, StepPage, Task,
    TaskPage, Transition,
};
pub use templates::{RegisteredTemplate, TemplateList};
pub use tokens::{TokenInfo, TokenList, NewToken, CreatedToken};
pub use workers::{WorkerReport, WorkerInfo, WorkerList, UnservedStep};
