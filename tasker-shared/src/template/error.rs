//! How a template can be wrong, with the file and line that say so.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A template that could not be loaded: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub struct Error {
    /// The file (or a label such as `<request>` for templates that came from elsewhere).
    pub file: String,
    /// 1-based line, when it could be found.
    pub line: Option<usize>,
    /// 1-based column on that line, when the parser gave one.
    pub column: Option<usize>,
    pub kind: ErrorKind,
}

impl Error {
    /// A problem of `file` as a whole (no line).
    pub fn of_file(file: impl Into<String>, kind: ErrorKind) -> Self {
        Error {
            file: file.into(),
            line: None,
            column: None,
            kind,
        }
    }

    /// A problem at `at` in `file`, if known.
    pub fn at(file: impl Into<String>, at: Option<super::Position>, kind: ErrorKind) -> Self {
        Error {
            file: file.into(),
            line: at.map(|p| p.line),
            column: at.map(|p| p.column),
            kind,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                write!(f, "{}:{}:{}: {}", self.file, line, column, self.kind)
            }
            (Some(line), None) => write!(f, "{}:{}: {}", self.file, line, self.kind),
            _ => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

/// The ways a template can be wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ErrorKind {
    #[error("the template is empty")]
    Empty,
    #[error("invalid YAML: {0}")]
    Syntax(String),
    #[error("could not read the file: {0}")]
    Io(String),
    /// Its parse took longer than its budget (milliseconds) and was stopped.
    #[error("the text took longer than {} to read and its parse was stopped; simplify it", budget(*.0))]
    TooSlow(u64),
    /// The process parsing it failed (started, crashed, or answered nonsense).
    #[error("the parser failed: {0}")]
    ParserFailed(String),
    #[error("the template has no steps")]
    NoSteps,
    #[error("`{field}` {problem}")]
    InvalidField { field: String, problem: String },
    #[error("duplicate step `{name}` (first defined on line {first_line})")]
    DuplicateStep { name: String, first_line: usize },
    #[error("step `{step}` depends on unknown step `{dependency}`")]
    UnknownDependency { step: String, dependency: String },
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("decision step `{step}` names unknown branch `{branch}`")]
    UnknownBranch { step: String, branch: String },
    #[error("branch `{branch}` of decision step `{step}` must depend on `{step}`")]
    BranchNotChild { step: String, branch: String },
    #[error("decision step `{step}` declares no branches")]
    DecisionWithoutBranches { step: String },
    #[error("step `{step}` declares branches but is not a decision step")]
    BranchesOnNonDecision { step: String },
    #[error("invalid context_schema: {0}")]
    ContextSchema(String),
    #[error("template {0} is defined twice")]
    DuplicateTemplate(String),
    #[error("batch_worker step `{step}` must depend on exactly one batchable step")]
    BatchWorkerParent { step: String },
    #[error("batchable step `{step}` must have exactly one batch_worker child (found {found})")]
    BatchableChildren { step: String, found: usize },
    #[error("step `{step}`: on_failure: continue is only allowed on batch_worker steps")]
    FailurePolicyOnNonBatch { step: String },
}

/// A budget in milliseconds as people say it: `2 s`, `250 ms`.
fn budget(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}
