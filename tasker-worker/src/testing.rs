//! Handler tests without servers (docs/testing.md): a [`TestStep`] is one attempt of one step
//! — its context, parent results, attempt and batch — made by hand or from a template's step;
//! [`TestStep::run`] runs a Rust handler on it as a worker would (its timeout, a panic caught)
//! and [`TestStep::judge`] reads any handler's outcome as the engine would: the worker core's
//! checks of a result (storable, within `worker.max_result_bytes`), the engine's rule for a
//! decision's or a batchable step's result, and whether the failure is retried. Ruby, Python
//! and TypeScript reach the same through [`test_job`] and [`test_judge`] (a test step and an
//! outcome as JSON text), so a handler test judges alike in every language.
//!
//! The example of docs/testing.md (a unit test keeps the two the same):
//!
//! ```rust
//! use serde_json::{Value, json};
//! use tasker_worker::testing::{TestOutcome, TestStep};
//! use tasker_worker::{HandlerError, Registry, StepContext};
//!
//! async fn route_by_total(ctx: StepContext) -> Result<Value, HandlerError> {
//!     let parents = ctx.parent_results.all().await?;
//!     let total = parents.get("price").and_then(|p| p["total"].as_f64());
//!     let total = total.ok_or_else(|| HandlerError::retryable("no_price", "price gave no total"))?;
//!     let branch = if total > 1000.0 { "manual_review" } else { "auto_approve" };
//!     Ok(json!({"branches": [branch]}))
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut registry = Registry::new();
//!     registry.register("route_by_total", route_by_total);
//!     let step = TestStep::new("route_by_total").decision(&["auto_approve", "manual_review"]);
//!     tokio::runtime::Runtime::new()?.block_on(async {
//!         let small = step.clone().parent("price", json!({"total": 40})).run(&registry).await?;
//!         assert_eq!(small.result(), Some(&json!({"branches": ["auto_approve"]})));
//!         let missing = step.max_attempts(3).run(&registry).await?;
//!         assert!(matches!(missing, TestOutcome::Failure { retried: true, .. }));
//!         Ok::<_, Box<dyn std::error::Error>>(())
//!     })
//! }
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use tasker_shared::api::StepInputs;
use tasker_shared::{Outcome, RetryPolicy, StepError, StepMessage, StepType, TaskTemplate};

use crate::handler::{Registry, StepContext};
use crate::host::Job;

/// One attempt of one step, as a handler test gives it. Every field has a default but the
/// handler (or a template's step, which names it); the JSON form (`serde`) is what the Ruby,
/// Python and TypeScript testing modules send.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestStep {
    /// One attempt of a step as the API gives it (`GET /v1/tasks/{id}/steps/{step}/inputs`,
    /// `tasker replay`): everything below is read from it.
    pub inputs: Option<StepInputs>,
    /// The handler to run (the template's step names it when `template` is given).
    pub handler: Option<String>,
    /// A template file: the step's handler, type, branches, retry policy, timeout and
    /// namespace are read from it (`step` names the step).
    pub template: Option<PathBuf>,
    /// The step of `template`, by name.
    pub step: Option<String>,
    pub step_name: Option<String>,
    pub step_type: StepType,
    /// A decision's branches.
    pub branches: Vec<String>,
    pub namespace: Option<String>,
    pub task_name: Option<String>,
    pub task_id: Option<Uuid>,
    pub step_id: Option<Uuid>,
    /// The task's context (`{}` unless given).
    pub context: Value,
    /// Parent results by step name.
    pub parent_results: Map<String, Value>,
    /// A batch worker's batch.
    pub input: Option<Value>,
    /// From 1.
    pub attempt: u32,
    pub retry: RetryPolicy,
    /// Overrides `retry.max_attempts` when given.
    pub max_attempts: Option<u32>,
    /// Seconds.
    pub timeout: f64,
    pub max_result_bytes: usize,
}

impl Default for TestStep {
    fn default() -> Self {
        Self {
            inputs: None,
            handler: None,
            template: None,
            step: None,
            step_name: None,
            step_type: StepType::Standard,
            branches: Vec::new(),
            namespace: None,
            task_name: None,
            task_id: None,
            step_id: None,
            context: Value::Object(Map::new()),
            parent_results: Map::new(),
            input: None,
            attempt: 1,
            retry: RetryPolicy::default(),
            max_attempts: None,
            timeout: tasker_shared::template::DEFAULT_TIMEOUT_SECONDS as f64,
            max_result_bytes: tasker_shared::config::WorkerConfig::default().max_result_bytes,
        }
    }
}

/// Why a test step cannot be made.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TestError(String);

/// An attempt's outcome as the engine reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TestOutcome {
    /// The step completes with `result`; a decision's chosen `branches`, a batchable step's
    /// `batches`.
    Success {
        result: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        branches: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        batches: Option<Vec<Value>>,
    },
    /// The attempt failed: `retryable` as the handler (or the core) said; `retried` when the
    /// engine runs another attempt, after `retry_in` seconds (the handler's own delay, else the
    /// step's backoff).
    Failure {
        retryable: bool,
        retried: bool,
        error: StepError,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_in: Option<f64>,
    },
}

impl TestOutcome {
    pub fn is_success(&self) -> bool {
        matches!(self, TestOutcome::Success { .. })
    }

    /// The result of a success.
    pub fn result(&self) -> Option<&Value> {
        match self {
            TestOutcome::Success { result, .. } => Some(result),
            TestOutcome::Failure { .. } => None,
        }
    }

    /// The error of a failure.
    pub fn error(&self) -> Option<&StepError> {
        match self {
            TestOutcome::Failure { error, .. } => Some(error),
            TestOutcome::Success { .. } => None,
        }
    }
}

impl TestStep {
    /// An attempt of `handler` with an empty context and no parents.
    pub fn new(handler: impl Into<String>) -> Self {
        Self {
            handler: Some(handler.into()),
            ..Self::default()
        }
    }

    /// An attempt of the step `step` of the template file `path`, as the engine would dispatch
    /// it (its handler, type, branches, retry policy, timeout and namespace).
    pub fn from_template(path: impl AsRef<Path>, step: &str) -> Result<Self, TestError> {
        Self {
            template: Some(path.as_ref().to_owned()),
            step: Some(step.to_owned()),
            ..Self::default()
        }
        .resolved()
    }

    pub fn context(mut self, context: Value) -> Self {
        self.context = context;
        self
    }

    pub fn parent(mut self, step: impl Into<String>, result: Value) -> Self {
        self.parent_results.insert(step.into(), result);
        self
    }

    pub fn input(mut self, batch: Value) -> Self {
        self.input = Some(batch);
        self
    }

    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.as_secs_f64();
        self
    }

    /// A decision step that may choose among `branches`.
    pub fn decision(mut self, branches: &[&str]) -> Self {
        self.step_type = StepType::Decision;
        self.branches = branches.iter().map(|b| (*b).to_owned()).collect();
        self
    }

    /// A batchable step.
    pub fn batchable(mut self) -> Self {
        self.step_type = StepType::Batchable;
        self
    }

    /// Reads its template's step into it (once), and checks what it says.
    pub fn resolved(mut self) -> Result<Self, TestError> {
        if let Some(inputs) = self.inputs.take() {
            self.apply_inputs(inputs)?;
        }
        if let Some(path) = self.template.take() {
            self.apply_template(&path)?;
        }
        let handler = self.handler.as_deref().unwrap_or_default();
        if handler.trim().is_empty() {
            return Err(TestError(
                "a test step needs a handler (or a template and its step)".into(),
            ));
        }
        let max = self.attempts();
        if self.attempt == 0 || self.attempt > max {
            return Err(TestError(format!(
                "attempt {} is not between 1 and max_attempts ({max})",
                self.attempt
            )));
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(TestError(format!(
                "timeout {} is not a positive number of seconds",
                self.timeout
            )));
        }
        Ok(self)
    }

    /// An attempt replayed: the step's handler, inputs and policies as the engine recorded them.
    pub fn from_inputs(inputs: StepInputs) -> Result<Self, TestError> {
        Self {
            inputs: Some(inputs),
            ..Self::default()
        }
        .resolved()
    }

    fn apply_inputs(&mut self, i: StepInputs) -> Result<(), TestError> {
        let json = |v: &str| Value::String(v.to_owned());
        self.step_type = serde_json::from_value(json(&i.step_type)).map_err(|_| {
            TestError(format!(
                "step type {:?} has no handler to test",
                i.step_type
            ))
        })?;
        self.retry = RetryPolicy {
            max_attempts: i.max_attempts,
            backoff: serde_json::from_value(json(&i.retry.backoff))
                .map_err(|_| TestError(format!("unknown backoff {:?}", i.retry.backoff)))?,
            base_ms: i.retry.base_ms,
            max_ms: i.retry.max_ms,
        };
        self.handler = Some(i.handler);
        self.step_name = Some(i.step_name);
        self.branches = i.branches;
        self.namespace = Some(i.namespace);
        self.task_name = Some(i.task_name);
        self.task_id = Some(i.task_id);
        self.step_id = Some(i.step_id);
        self.context = i.context;
        self.parent_results = i.parent_results;
        self.input = i.input;
        self.attempt = i.attempt;
        self.max_attempts = None;
        self.timeout = i.timeout_ms as f64 / 1000.0;
        Ok(())
    }

    fn apply_template(&mut self, path: &Path) -> Result<(), TestError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| TestError(format!("cannot read the template {file}: {e}")))?;
        let loaded = TaskTemplate::load(&text, &file).map_err(|e| TestError(e.to_string()))?;
        let t = loaded.template;
        let name = self
            .step
            .as_deref()
            .ok_or_else(|| TestError(format!("name the step of {file} to test (`step`)")))?;
        let step = t.steps.iter().find(|s| s.name == name).ok_or_else(|| {
            let names: Vec<&str> = t.steps.iter().map(|s| s.name.as_str()).collect();
            TestError(format!(
                "{file} has no step {name:?} (its steps: {})",
                names.join(", ")
            ))
        })?;
        if !step.runs_on_worker() {
            return Err(TestError(format!(
                "step {name:?} of {file} is resolved by the orchestrator (a wait or child step): it has no handler to test"
            )));
        }
        if let Some(h) = self.handler.as_deref().filter(|h| *h != step.handler) {
            return Err(TestError(format!(
                "step {name:?} of {file} runs handler {:?}, not {h:?}",
                step.handler
            )));
        }
        self.handler = Some(step.handler.clone());
        self.step_name = Some(step.name.clone());
        self.step_type = step.step_type;
        self.branches = step.branches.clone();
        self.retry = step.retry;
        self.timeout = step.timeout_seconds as f64;
        self.namespace =
            Some(tasker_shared::template::step_namespace(step, &t.namespace).to_owned());
        self.task_name = Some(t.name.clone());
        Ok(())
    }

    fn attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(self.retry.max_attempts).max(1)
    }

    /// The step message a worker would receive for this attempt.
    pub fn message(&self) -> StepMessage {
        let handler = self.handler.clone().unwrap_or_default();
        StepMessage {
            task_id: self.task_id.unwrap_or_else(Uuid::now_v7),
            step_id: self.step_id.unwrap_or_else(Uuid::now_v7),
            namespace: self.namespace.clone().unwrap_or_else(|| "test".into()),
            task_name: self.task_name.clone().unwrap_or_else(|| "test".into()),
            step_name: self.step_name.clone().unwrap_or_else(|| handler.clone()),
            handler,
            attempt: self.attempt,
            max_attempts: self.attempts(),
            context: self.context.clone(),
            context_by_reference: false,
            parent_results: self.parent_results.clone(),
            parent_results_by_reference: false,
            input: self.input.clone(),
            dispatched_at: Utc::now(),
            timeout_ms: (self.timeout * 1000.0).round().max(1.0) as u64,
            queue_timeout_ms: None,
            traceparent: None,
            priority: None,
            resent: false,
        }
    }

    /// The context a handler receives for this attempt (what it streams is dropped).
    pub fn step_context(&self) -> StepContext {
        StepContext::from(self.message())
    }

    /// Runs `registry`'s handler for this step on it, as a worker would — its timeout, a panic
    /// caught, an unregistered handler refused — and judges the outcome.
    pub async fn run(&self, registry: &Registry) -> Result<TestOutcome, TestError> {
        let this = self.clone().resolved()?;
        let outcome = crate::host::run_one(registry, Job::new(1, this.message())).await;
        Ok(this.judge(outcome))
    }

    /// `outcome` as the engine reads it for this attempt.
    pub fn judge(&self, outcome: Outcome) -> TestOutcome {
        let outcome = crate::worker::outcome::storable(outcome, self.max_result_bytes);
        let outcome = match outcome {
            Outcome::Success { result } => {
                match tasker_shared::result_shape::problem(self.step_type, &self.branches, &result)
                {
                    Some(error) => Outcome::Failure {
                        error,
                        retryable: false,
                        retry_after_ms: None,
                    },
                    None => Outcome::Success { result },
                }
            }
            failure => failure,
        };
        match outcome {
            Outcome::Success { result } => TestOutcome::Success {
                branches: (self.step_type == StepType::Decision).then(|| {
                    result["branches"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|b| b.as_str().map(str::to_owned))
                        .collect()
                }),
                batches: (self.step_type == StepType::Batchable)
                    .then(|| result["batches"].as_array().cloned().unwrap_or_default()),
                result,
            },
            Outcome::Failure {
                error,
                retryable,
                retry_after_ms,
            } => {
                let retried = retryable && self.attempt < self.attempts();
                let delay = retry_after_ms
                    .map(Duration::from_millis)
                    .unwrap_or_else(|| self.retry.delay_after(self.attempt));
                TestOutcome::Failure {
                    retryable,
                    retried,
                    error,
                    retry_in: retried.then_some(delay.as_secs_f64()),
                }
            }
        }
    }
}

/// The job (as `take_steps` hands it to a binding, id 1) for a test step given as JSON.
pub fn test_job(spec: &str) -> Result<String, TestError> {
    let step = parse(spec)?;
    let job = crate::batch_host::JobView {
        id: 1,
        step: step.message(),
    };
    Ok(serde_json::to_string(&job).expect("jobs serialize to JSON"))
}

/// A binding's outcome (the worker protocol's `outcome`, as it reports it to the core) for a
/// test step given as JSON, judged ([`TestStep::judge`]), as JSON.
pub fn test_judge(spec: &str, outcome: &str) -> Result<String, TestError> {
    let step = parse(spec)?;
    let view: crate::batch_host::OutcomeView = serde_json::from_str(outcome)
        .map_err(|e| TestError(format!("the handler's outcome is not the protocol's: {e}")))?;
    Ok(serde_json::to_string(&step.judge(view.outcome)).expect("outcomes serialize to JSON"))
}

fn parse(spec: &str) -> Result<TestStep, TestError> {
    serde_json::from_str::<TestStep>(spec)
        .map_err(|e| TestError(format!("not a test step: {e}")))?
        .resolved()
}

#[cfg(test)]
mod tests;
mod workflow;

pub use workflow::{EnvError, Place, WorkflowEnv, orchestrator_bin};
