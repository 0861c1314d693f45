//! Tasker's domain, with no I/O: task templates (YAML + validation), the step DAG and the plan
//! of a new task's steps, the task and step state vocabulary with its transition tables, the
//! messages exchanged over the broker, and configuration.
//!
//! Every other crate builds on these types. Nothing here opens a socket. What reads from outside
//! the process is named: [`config`] reads its TOML file and the environment, [`template::load_dir`]
//! template files, [`tls`] certificate files, [`config::process_name`] the host name; and
//! [`logging::init`] sets up every process's log output the same way.

pub mod alerting;
pub mod api;
pub mod compose;
pub mod config;
pub mod dag;
pub mod deadline;
pub mod flow;
pub mod json_check;
pub mod logging;
pub mod message;
pub mod metric;
pub mod names;
pub mod namespaces;
pub mod plan;
pub mod result_shape;
pub mod retry;
pub mod start_controls;
pub mod step_state;
pub mod stream;
pub mod task_state;
pub mod template;
pub mod time;
pub mod tls;
pub mod triggers;

pub use config::Config;
pub use message::{Outcome, StepError, StepMessage, StepResult};
pub use retry::{Backoff, RetryPolicy};
pub use step_state::{StepEvent, StepState};
pub use task_state::{TaskEvent, TaskState};
pub use template::{FailurePolicy, StepTemplate, StepType, TaskTemplate};
