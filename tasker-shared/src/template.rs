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

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dag::{self, Dag};
use crate::retry::RetryPolicy;

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
    /// A template file or registered definition, in bytes.
    pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;
    /// `handler`, `description` and every branch name, in characters.
    pub const MAX_TEXT_CHARS: usize = 4_096;
}

/// A workflow definition: named steps, their dependencies, handlers and policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTemplate {
    pub namespace: String,
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema every new task's context must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_schema: Option<Value>,
    #[serde(default)]
    pub steps: Vec<StepTemplate>,
}

/// One step of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepTemplate {
    pub name: String,
    /// Name of the handler a worker runs for this step.
    pub handler: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default, rename = "type")]
    pub step_type: StepType,
    /// For a `decision` step: the steps it may choose to run. The ones it does not choose, and
    /// everything that only they lead to, are skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<String>,
    #[serde(default)]
    pub retry: RetryPolicy,
    /// How long the handler may run, from its start to its result.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// How long the step may wait for a worker to start it (schedule to start). None: it waits
    /// as long as it takes, however long no worker is up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_timeout_seconds: Option<u64>,
    /// For a `batch_worker` step: what a batch that fails for good does to the task.
    #[serde(default, skip_serializing_if = "FailurePolicy::is_default")]
    pub on_failure: FailurePolicy,
}

/// What a failed batch does to its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicy {
    /// The task ends in `error` (like any other step).
    #[default]
    FailTask,
    /// The batch is recorded as failed and the convergence step still runs, seeing
    /// `{"failed": true, "error": …}` in place of that batch's result.
    Continue,
}

impl FailurePolicy {
    pub const ALL: [FailurePolicy; 2] = [FailurePolicy::FailTask, FailurePolicy::Continue];

    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::FailTask => "fail_task",
            FailurePolicy::Continue => "continue",
        }
    }

    fn is_default(&self) -> bool {
        *self == FailurePolicy::FailTask
    }
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECONDS
}

/// How a step takes part in the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepType {
    /// Runs when all its parents completed; skipped if any parent was skipped.
    #[default]
    Standard,
    /// Returns `{"branches": [...]}` naming which of its declared branches run.
    Decision,
    /// Runs when all its parents are completed or skipped, as long as at least one completed.
    Convergence,
    /// Inspects its input and returns `{"batches": [input, …]}`: one instance of its
    /// `batch_worker` child is created per entry, all in one transaction.
    Batchable,
    /// A template instantiated once per batch of its (single, batchable) parent; each instance
    /// receives its batch as `input`. Its children wait for every instance.
    BatchWorker,
}

impl StepType {
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::Standard => "standard",
            StepType::Decision => "decision",
            StepType::Convergence => "convergence",
            StepType::Batchable => "batchable",
            StepType::BatchWorker => "batch_worker",
        }
    }

    pub const ALL: [StepType; 5] = [
        StepType::Standard,
        StepType::Decision,
        StepType::Convergence,
        StepType::Batchable,
        StepType::BatchWorker,
    ];
}

/// A template that could not be loaded: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// The file (or a label such as `<request>` for templates that came from elsewhere).
    pub file: String,
    /// 1-based line, when it could be found.
    pub line: Option<usize>,
    pub kind: ErrorKind,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.kind),
            None => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

/// The ways a template can be wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("the template is empty")]
    Empty,
    #[error("invalid YAML: {0}")]
    Syntax(String),
    #[error("could not read the file: {0}")]
    Io(String),
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

impl TaskTemplate {
    /// Parses, validates and compiles a template (graph and context schema).
    pub fn load(src: &str, file: &str) -> Result<Loaded, Error> {
        let err = |line, kind| Error {
            file: file.to_owned(),
            line,
            kind,
        };
        if src.len() > limits::MAX_SOURCE_BYTES {
            return Err(err(
                None,
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
            return Err(err(None, ErrorKind::Empty));
        }
        // Bounded before the parser sees it: its work can grow much faster than the text.
        bounds::check(src).map_err(|(line, kind)| err(Some(line), kind))?;
        let template: TaskTemplate = serde_norway::from_str(src).map_err(|e| {
            err(
                e.location().map(|l| l.line()),
                ErrorKind::Syntax(e.to_string()),
            )
        })?;
        let lines = StepLines::scan(src);
        template.compile(file, &lines)
    }

    /// Validates an already-parsed template, e.g. one read back from storage.
    pub fn validate(self, file: &str) -> Result<Loaded, Error> {
        self.compile(file, &StepLines::default())
    }

    /// `namespace/name@version`.
    pub fn key(&self) -> String {
        format!("{}/{}@{}", self.namespace, self.name, self.version)
    }

    fn compile(self, file: &str, lines: &StepLines) -> Result<Loaded, Error> {
        let err = |line, kind| Error {
            file: file.to_owned(),
            line,
            kind,
        };
        for (field, value) in [
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("version", &self.version),
        ] {
            check_identifier(field, value).map_err(|k| err(None, k))?;
        }
        if self.steps.is_empty() {
            return Err(err(None, ErrorKind::NoSteps));
        }
        if self.steps.len() > limits::MAX_STEPS {
            return Err(err(
                None,
                ErrorKind::InvalidField {
                    field: "steps".into(),
                    problem: format!(
                        "at most {} steps per template (got {})",
                        limits::MAX_STEPS,
                        self.steps.len()
                    ),
                },
            ));
        }
        if let Some(d) = &self.description {
            check_text("description", d).map_err(|k| err(None, k))?;
        }
        if let Some(schema) = &self.context_schema
            && let Err(problem) = crate::json_check::check(schema, crate::json_check::MAX_DEPTH)
        {
            return Err(err(
                None,
                ErrorKind::InvalidField {
                    field: "context_schema".into(),
                    problem: problem.to_string(),
                },
            ));
        }
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let line = lines.line(&step.name, i);
            check_identifier("step name", &step.name).map_err(|k| err(line, k))?;
            if step.handler.trim().is_empty() {
                return Err(err(
                    line,
                    ErrorKind::InvalidField {
                        field: format!("steps.{}.handler", step.name),
                        problem: "must not be empty".into(),
                    },
                ));
            }
            if let Some(&first) = first_seen.get(step.name.as_str()) {
                return Err(err(
                    line,
                    ErrorKind::DuplicateStep {
                        name: step.name.clone(),
                        first_line: lines.line(&step.name, first).unwrap_or(0),
                    },
                ));
            }
            first_seen.insert(&step.name, i);
            check_policy(step).map_err(|k| err(line, k))?;
        }
        let dag = Dag::build(
            self.steps
                .iter()
                .map(|s| (s.name.as_str(), s.depends_on.iter().map(String::as_str))),
        )
        .map_err(|e| match e {
            dag::Error::UnknownDependency { step, dependency } => {
                let line = lines.line(&step, first_seen[step.as_str()]);
                err(line, ErrorKind::UnknownDependency { step, dependency })
            }
            dag::Error::Cycle(cycle) => err(None, ErrorKind::Cycle(cycle)),
        })?;
        for (i, step) in self.steps.iter().enumerate() {
            let line = lines.line(&step.name, i);
            match step.step_type {
                StepType::Decision if step.branches.is_empty() => {
                    return Err(err(
                        line,
                        ErrorKind::DecisionWithoutBranches {
                            step: step.name.clone(),
                        },
                    ));
                }
                StepType::Decision => {
                    for branch in &step.branches {
                        let Some(&b) = first_seen.get(branch.as_str()) else {
                            return Err(err(
                                line,
                                ErrorKind::UnknownBranch {
                                    step: step.name.clone(),
                                    branch: branch.clone(),
                                },
                            ));
                        };
                        if !dag.parents(b).contains(&i) {
                            return Err(err(
                                line,
                                ErrorKind::BranchNotChild {
                                    step: step.name.clone(),
                                    branch: branch.clone(),
                                },
                            ));
                        }
                    }
                }
                _ if !step.branches.is_empty() => {
                    return Err(err(
                        line,
                        ErrorKind::BranchesOnNonDecision {
                            step: step.name.clone(),
                        },
                    ));
                }
                _ => {}
            }
        }
        for (i, step) in self.steps.iter().enumerate() {
            let line = lines.line(&step.name, i);
            let kind_of = |j: usize| self.steps[j].step_type;
            if step.on_failure != FailurePolicy::FailTask && step.step_type != StepType::BatchWorker
            {
                return Err(err(
                    line,
                    ErrorKind::FailurePolicyOnNonBatch {
                        step: step.name.clone(),
                    },
                ));
            }
            match step.step_type {
                StepType::BatchWorker => {
                    let parents = dag.parents(i);
                    if parents.len() != 1 || kind_of(parents[0]) != StepType::Batchable {
                        return Err(err(
                            line,
                            ErrorKind::BatchWorkerParent {
                                step: step.name.clone(),
                            },
                        ));
                    }
                }
                StepType::Batchable => {
                    let found = dag
                        .children(i)
                        .iter()
                        .filter(|&&c| kind_of(c) == StepType::BatchWorker)
                        .count();
                    if found != 1 {
                        return Err(err(
                            line,
                            ErrorKind::BatchableChildren {
                                step: step.name.clone(),
                                found,
                            },
                        ));
                    }
                }
                _ => {}
            }
        }
        let schema = match &self.context_schema {
            None => None,
            Some(schema) => Some(Arc::new(
                jsonschema::validator_for(schema)
                    .map_err(|e| err(None, ErrorKind::ContextSchema(e.to_string())))?,
            )),
        };
        Ok(Loaded {
            template: self,
            dag,
            schema,
            source: PathBuf::from(file),
        })
    }
}

/// A registered template version, as the API answers and clients read it (one definition of
/// the wire type for the server and every Rust client).
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredTemplate {
    pub id: uuid::Uuid,
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub description: Option<String>,
    /// The template as stored: the JSON form of its YAML.
    pub definition: Value,
    pub registered_at: chrono::DateTime<chrono::Utc>,
    /// The worker, user or orchestrator that registered it (`None` for versions registered
    /// before this was recorded).
    pub registered_by: Option<String>,
}

impl RegisteredTemplate {
    /// `namespace/name@version`.
    pub fn key(&self) -> String {
        format!("{}/{}@{}", self.namespace, self.name, self.version)
    }

    /// The stored definition, parsed.
    pub fn template(&self) -> Result<TaskTemplate, serde_json::Error> {
        serde_json::from_value(self.definition.clone())
    }
}

/// A validated template with its graph and compiled context schema.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub template: TaskTemplate,
    pub dag: Dag,
    pub schema: Option<Arc<jsonschema::Validator>>,
    pub source: PathBuf,
}

impl Loaded {
    /// Checks a task context against the template's schema; each problem is one message naming
    /// the JSON pointer it concerns.
    pub fn check_context(&self, context: &Value) -> Result<(), Vec<String>> {
        let Some(schema) = &self.schema else {
            return Ok(());
        };
        let problems: Vec<String> = schema
            .iter_errors(context)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// Whether `value` can be a namespace, name or version: 1 to 128 ASCII letters, digits, `_`,
/// `-` and `.`. Anything else names no template, so callers need not look it up.
pub fn is_identifier(value: &str) -> bool {
    check_identifier("", value).is_ok()
}

fn check_identifier(field: &str, value: &str) -> Result<(), ErrorKind> {
    let invalid = |problem: &str| {
        Err(ErrorKind::InvalidField {
            field: field.to_owned(),
            problem: format!("{problem} (got {value:?})"),
        })
    };
    if value.is_empty() {
        return invalid("must not be empty");
    }
    if value.len() > 128 {
        return invalid("must be at most 128 characters");
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return invalid("may contain only ASCII letters, digits, `_`, `-` and `.`");
    }
    Ok(())
}

/// Free text (a handler name, a description): not empty where required, bounded, and free of
/// NUL and other control characters, which PostgreSQL or a log line would choke on.
fn check_text(field: &str, value: &str) -> Result<(), ErrorKind> {
    let invalid = |problem: String| {
        Err(ErrorKind::InvalidField {
            field: field.to_owned(),
            problem,
        })
    };
    if value.chars().count() > limits::MAX_TEXT_CHARS {
        return invalid(format!(
            "must be at most {} characters",
            limits::MAX_TEXT_CHARS
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return invalid(format!(
            "must not contain control characters (found U+{:04X})",
            c as u32
        ));
    }
    Ok(())
}

fn check_policy(step: &StepTemplate) -> Result<(), ErrorKind> {
    let invalid = |field: &str, problem: String| {
        Err(ErrorKind::InvalidField {
            field: format!("steps.{}.{field}", step.name),
            problem,
        })
    };
    let r = &step.retry;
    if !(1..=limits::MAX_ATTEMPTS).contains(&r.max_attempts) {
        return invalid(
            "retry.max_attempts",
            format!(
                "must be 1 to {} (got {})",
                limits::MAX_ATTEMPTS,
                r.max_attempts
            ),
        );
    }
    for (field, ms) in [("retry.base_ms", r.base_ms), ("retry.max_ms", r.max_ms)] {
        if ms > limits::MAX_BACKOFF_MS {
            return invalid(
                field,
                format!(
                    "must be at most {} (one day; got {ms})",
                    limits::MAX_BACKOFF_MS
                ),
            );
        }
    }
    if r.base_ms > r.max_ms {
        return invalid("retry.base_ms", "must not exceed retry.max_ms".into());
    }
    let timeouts = [
        ("timeout_seconds", Some(step.timeout_seconds)),
        ("queue_timeout_seconds", step.queue_timeout_seconds),
    ];
    for (field, seconds) in timeouts {
        if let Some(s) = seconds
            && !(1..=limits::MAX_TIMEOUT_SECONDS).contains(&s)
        {
            return invalid(
                field,
                format!(
                    "must be 1 to {} seconds (30 days; got {s})",
                    limits::MAX_TIMEOUT_SECONDS
                ),
            );
        }
    }
    check_text(&format!("steps.{}.handler", step.name), &step.handler)?;
    for branch in &step.branches {
        check_text(&format!("steps.{}.branches", step.name), branch)?;
    }
    Ok(())
}

/// Line numbers of `- name: X` entries, so semantic errors can point into the file.
#[derive(Debug, Default)]
struct StepLines(Vec<(String, usize)>);

impl StepLines {
    fn scan(src: &str) -> StepLines {
        let mut in_steps = false;
        let mut found = Vec::new();
        for (i, raw) in src.lines().enumerate() {
            if !raw.starts_with([' ', '\t', '-']) && !raw.trim().is_empty() {
                in_steps = raw.trim_end().starts_with("steps:");
                continue;
            }
            if !in_steps {
                continue;
            }
            let t = raw.trim_start().trim_start_matches('-').trim_start();
            if let Some(rest) = t.strip_prefix("name:") {
                let value = rest.trim().trim_matches(|c| c == '"' || c == '\'');
                found.push((value.to_owned(), i + 1));
            }
        }
        StepLines(found)
    }

    /// Line of the `index`-th step, if it is the one called `name`.
    fn line(&self, name: &str, index: usize) -> Option<usize> {
        self.0
            .get(index)
            .filter(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .or_else(|| self.0.iter().find(|(n, _)| n == name).map(|(_, l)| *l))
    }
}

/// Loads every `*.yaml` / `*.yml` template below `dir`, sorted by path. The first invalid file
/// fails the whole load, as does the same `namespace/name@version` in two files.
pub fn load_dir(dir: &Path) -> Result<Vec<Loaded>, Error> {
    let mut files = Vec::new();
    collect_yaml(dir, &mut files).map_err(|e| Error {
        file: dir.display().to_string(),
        line: None,
        kind: ErrorKind::Io(e.to_string()),
    })?;
    files.sort();
    let mut loaded: Vec<Loaded> = Vec::with_capacity(files.len());
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for file in files {
        let label = file.display().to_string();
        let src = std::fs::read_to_string(&file).map_err(|e| Error {
            file: label.clone(),
            line: None,
            kind: ErrorKind::Io(e.to_string()),
        })?;
        let mut t = TaskTemplate::load(&src, &label)?;
        t.source = file.clone();
        let key = t.template.key();
        if let Some(first) = seen.insert(key.clone(), file) {
            return Err(Error {
                file: label,
                line: None,
                kind: ErrorKind::DuplicateTemplate(format!("{key} (also in {})", first.display())),
            });
        }
        loaded.push(t);
    }
    Ok(loaded)
}

/// The distinct namespaces of `templates`, sorted: the step queues a worker for them consumes.
pub fn namespaces(templates: &[Loaded]) -> Vec<String> {
    let set: std::collections::BTreeSet<&str> = templates
        .iter()
        .map(|t| t.template.namespace.as_str())
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_yaml(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

pub mod bounds;
#[cfg(test)]
mod tests;
