//! The worker core shared by every handler language. It owns all I/O — consuming step
//! messages, publishing results with confirms, acknowledging, health — and hands steps to a
//! [`HandlerHost`]: native Rust handlers ([`RustHost`]) or, through FFI bindings, handlers in
//! Ruby, Python or TypeScript, in batches.

pub mod batch_host;
pub mod cli;
pub mod embedded;
pub mod exact_json;
pub mod handler;
pub mod health;
pub mod host;
pub mod lanes;
pub mod log_forward;
pub mod metrics;
mod presence;
pub mod references;
pub mod registration;
pub mod setup;
pub mod stream;
#[cfg(test)]
mod test_support;
pub mod testing;
pub mod worker;

pub use batch_host::{BatchHost, JobView, OutcomeView};
pub use cli::run;
pub use embedded::{EmbeddedWorker, ParentPage, StartOptions};
pub use handler::{
    DuplicateHandler, EachParentResult, Handler, HandlerError, HandlerFuture, ParentResults,
    Registry, StepContext,
};
pub use host::{Completion, CompletionSink, HandlerHost, Job, Report, RustHost};
pub use log_forward::{LogQueue, LogRecord, forward as forward_logs};
pub use registration::register_templates;
pub use setup::{Overrides, Setup};
pub use stream::{Emitter, StreamError};
pub use tasker_shared::logging::init as init_logging;
pub use worker::{Stats, Worker, WorkerOptions};
