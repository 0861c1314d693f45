//! What a template says: the task, its steps and their policies, as parsed from YAML; a
//! registered version as stored; a validated template with its graph and compiled schema.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DEFAULT_TIMEOUT_SECONDS;
use crate::dag::Dag;
use crate::retry::RetryPolicy;

/// A workflow definition: named steps, their dependencies, handlers and policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The priority of its tasks when a request names none (normal if unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<crate::flow::Priority>,
    /// A concurrency limit shared by every worker step of its tasks with the same key value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::flow::ConcurrencySpec>,
    /// A rate limit on every worker step of its tasks (a step's own replaces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<crate::flow::RateLimitSpec>,
    /// How long each of its tasks may run, and what happens to one that runs longer (a
    /// request's own `deadline` replaces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<crate::deadline::DeadlineSpec>,
    #[serde(default)]
    pub steps: Vec<StepTemplate>,
    /// The events that start its tasks, each with its conditions and context
    /// ([`crate::triggers`]).
    #[serde(default, rename = "on", skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<crate::triggers::TriggerSpec>,
}

/// One step of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepTemplate {
    pub name: String,
    /// The namespace whose workers run this step (its queue): the template's by default, so
    /// one template can send each step to the workers of its language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the handler a worker runs for this step (none for a wait or child step).
    #[serde(default, skip_serializing_if = "String::is_empty")]
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
    /// Makes this a wait step, which the orchestrator resolves itself (no worker, no handler):
    /// a durable sleep, a sleep until a time in the context, or a wait for a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<crate::time::WaitSpec>,
    /// Makes this a child-workflow step: it starts a task of another template, waits for it and
    /// completes with its result (no worker, no handler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<crate::compose::ChildSpec>,
    /// At most `limit` of this step with the same key value in flight at once (replaces the
    /// template's `concurrency` for this step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::flow::ConcurrencySpec>,
    /// At most `limit` starts of this step per `per` for one key (replaces the template's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<crate::flow::RateLimitSpec>,
}

impl StepTemplate {
    /// Whether a worker runs it: not a wait step nor a child step, which the orchestrator
    /// resolves itself.
    pub fn runs_on_worker(&self) -> bool {
        self.wait.is_none() && self.child.is_none()
    }

    /// The step's type as the engine stores it: `wait` for a wait step.
    pub fn engine_type(&self) -> StepType {
        if self.wait.is_some() {
            StepType::Wait
        } else if self.child.is_some() {
            StepType::Child
        } else {
            self.step_type
        }
    }

    /// The handler the engine stores: [`crate::time::WAIT_HANDLER`] for a wait step,
    /// [`crate::compose::CHILD_HANDLER`] for a child step.
    pub fn engine_handler(&self) -> &str {
        if self.wait.is_some() {
            crate::time::WAIT_HANDLER
        } else if self.child.is_some() {
            crate::compose::CHILD_HANDLER
        } else {
            &self.handler
        }
    }

    /// A wait step's specification in the engine's form (see [`crate::time::WaitSpec::compile`]).
    pub fn engine_wait(&self) -> Option<Value> {
        self.wait
            .as_ref()
            .and_then(|w| w.compile(&format!("steps.{}.wait", self.name)).ok())
    }
}

/// What a failed batch does to its task.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
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
    /// A step with `wait:`: the orchestrator resolves it when its time comes or its signal
    /// arrives; no worker runs it.
    Wait,
    /// A step with `child:`: the orchestrator starts a task of another template and the step
    /// ends as that task does; no worker runs it.
    Child,
}

impl StepType {
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::Standard => "standard",
            StepType::Decision => "decision",
            StepType::Convergence => "convergence",
            StepType::Batchable => "batchable",
            StepType::BatchWorker => "batch_worker",
            StepType::Wait => "wait",
            StepType::Child => "child",
        }
    }

    pub const ALL: [StepType; 7] = [
        StepType::Standard,
        StepType::Decision,
        StepType::Convergence,
        StepType::Batchable,
        StepType::BatchWorker,
        StepType::Wait,
        StepType::Child,
    ];
}

/// A validated template with its graph and compiled context schema.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub template: TaskTemplate,
    pub dag: Dag,
    pub schema: Option<Arc<jsonschema::Validator>>,
    /// Its `on:` list, compiled.
    pub triggers: Arc<[crate::triggers::Trigger]>,
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
