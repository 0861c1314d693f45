//! Task templates: the YAML a user writes to describe a workflow, parsed and validated.
//!
//! ```yaml
//! namespace: shop
//! name: fulfil_order
//! version: 1.0.0
//! context_schema: { type: object, required: [order_id] }
//! steps:
//!   - name: reserve
//!     handler: reserve_stock
//!   - name: charge
//!     handler: charge_card
//!     depends_on: [reserve]
//!     retry: { max_attempts: 5, backoff: exponential, base_ms: 200, max_ms: 5000 }
//!     timeout_seconds: 10
//! ```

mod alerts;
mod checks;
mod compile;
mod error;
mod flow;
pub(crate) mod loading;
mod positions;
mod reach;
mod schedules;
mod schema;
mod types;

pub mod bounds;
pub mod child;
#[cfg(test)]
mod tests;

pub use positions::Position;
pub(crate) use positions::Positions;

pub use alerts::{AlertRule, AlertsFile, parse_alerts, precheck_alerts};
pub use checks::is_identifier;
pub use error::{Error, ErrorKind};
pub use flow::{named_rate_keys, resolve as resolve_limits};
pub use loading::{SCHEDULES_DIR, load_dir, namespaces, schedule_files, served_namespaces};
pub use reach::{queue_timeout_seconds, reach, step_namespace};
pub use schedules::{load_schedules, parse_schedule, precheck_schedule};
pub use schema::{SchemaKind, json_schema};
pub use types::{FailurePolicy, Loaded, StepTemplate, StepType, TaskTemplate};

/// Default `timeout_seconds` of a step.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;

/// The range of every bounded value a template can set. A value outside it is refused when the
/// template loads, with the file, line and field, so that nothing a template says can overflow
/// a timer, a column or a timestamp later on.
pub mod limits {
    /// `retry.max_attempts`: 1 to 1,000.
    pub const MAX_ATTEMPTS: u32 = 1_000;
    /// `retry.base_ms` and `retry.max_ms`: at most one day.
    pub const MAX_BACKOFF_MS: u64 = 86_400_000;
    /// `timeout_seconds` and `queue_timeout_seconds`: 1 second to 30 days.
    pub const MAX_TIMEOUT_SECONDS: u64 = 2_592_000;
    /// Steps in one template.
    pub const MAX_STEPS: usize = 1_000;
    /// Child steps (`child:`) in one template: each starts a task, and a template that starts
    /// itself multiplies by this at every level.
    pub const MAX_CHILD_STEPS: usize = 32;
    /// A template file or registered definition, in bytes.
    pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;
    /// `handler`, `description` and every branch name, in characters.
    pub const MAX_TEXT_CHARS: usize = 4_096;
}

impl TaskTemplate {
    /// Parses, validates and compiles a template (graph and context schema).
    pub fn load(src: &str, file: &str) -> Result<Loaded, Error> {
        Self::precheck(src, file)?;
        let template: TaskTemplate = serde_norway::from_str(src).map_err(|e| {
            let at = e.location().map(|l| Position {
                line: l.line(),
                column: l.column(),
            });
            Error::at(file, at, ErrorKind::Syntax(e.to_string()))
        })?;
        template.compile(file, Some(src))
    }

    /// What is checked of a template's text before any parser reads it, in linear time: its
    /// size, that it says something, and the pre-scan's bounds ([`bounds`]). Cheap enough to
    /// run where the text arrives, before a parsing child is started for it.
    pub fn precheck(src: &str, file: &str) -> Result<(), Error> {
        if src.len() > limits::MAX_SOURCE_BYTES {
            return Err(Error::of_file(
                file,
                ErrorKind::InvalidField {
                    field: "(file)".into(),
                    problem: format!(
                        "a template may be at most {} bytes (got {})",
                        limits::MAX_SOURCE_BYTES,
                        src.len()
                    ),
                },
            ));
        }
        if src
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#') || l.trim() == "---")
        {
            return Err(Error::of_file(file, ErrorKind::Empty));
        }
        // Bounded before the parser sees it: its work can grow much faster than the text.
        bounds::check(src).map_err(|(line, kind)| Error {
            line: Some(line),
            ..Error::of_file(file, kind)
        })
    }

    /// Validates an already-parsed template, e.g. one read back from storage.
    pub fn validate(self, file: &str) -> Result<Loaded, Error> {
        self.compile(file, None)
    }

    /// `namespace/name@version`.
    pub fn key(&self) -> String {
        format!("{}/{}@{}", self.namespace, self.name, self.version)
    }
}
