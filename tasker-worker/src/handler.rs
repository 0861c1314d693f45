//! The handler contract, the same in every language: a handler is registered under a name,
//! receives a [`StepContext`] and returns a JSON value, a retryable error (retried by the
//! step's policy) or a permanent error (no retry).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use tasker_shared::{StepError, StepMessage};

/// What a handler receives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepContext {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub namespace: String,
    pub task_name: String,
    pub step_name: String,
    pub handler: String,
    /// 1-based.
    pub attempt: u32,
    pub max_attempts: u32,
    /// The task's input.
    pub context: Value,
    /// Results of completed parent steps, by step name.
    pub parent_results: Map<String, Value>,
    /// A batch worker's batch (what its batchable parent returned for it).
    pub input: Option<Value>,
}

impl From<StepMessage> for StepContext {
    fn from(m: StepMessage) -> Self {
        Self {
            task_id: m.task_id,
            step_id: m.step_id,
            namespace: m.namespace,
            task_name: m.task_name,
            step_name: m.step_name,
            handler: m.handler,
            attempt: m.attempt,
            max_attempts: m.max_attempts,
            context: m.context,
            parent_results: m.parent_results,
            input: m.input,
        }
    }
}

impl From<&StepMessage> for StepContext {
    fn from(m: &StepMessage) -> Self {
        Self {
            task_id: m.task_id,
            step_id: m.step_id,
            namespace: m.namespace.clone(),
            task_name: m.task_name.clone(),
            step_name: m.step_name.clone(),
            handler: m.handler.clone(),
            attempt: m.attempt,
            max_attempts: m.max_attempts,
            context: m.context.clone(),
            parent_results: m.parent_results.clone(),
            input: m.input.clone(),
        }
    }
}

/// A handler failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerError {
    /// Retried while the step's policy allows.
    Retryable(StepError),
    /// Ends the step (and its task) at once.
    Permanent(StepError),
}

impl HandlerError {
    pub fn retryable(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Retryable(StepError::new(kind, message))
    }

    pub fn permanent(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Permanent(StepError::new(kind, message))
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retryable(e) => write!(f, "retryable {}: {}", e.kind, e.message),
            Self::Permanent(e) => write!(f, "permanent {}: {}", e.kind, e.message),
        }
    }
}

impl std::error::Error for HandlerError {}

/// The future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, HandlerError>> + Send>>;

/// A native step handler. Any `Fn(StepContext) -> impl Future<Output = Result<Value,
/// HandlerError>>` is one.
pub trait Handler: Send + Sync + 'static {
    fn call(&self, ctx: StepContext) -> HandlerFuture;
}

impl<F, Fut> Handler for F
where
    F: Fn(StepContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
{
    fn call(&self, ctx: StepContext) -> HandlerFuture {
        Box::pin(self(ctx))
    }
}

/// Handlers by name.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: HashMap<String, Arc<dyn Handler>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.handlers.keys()).finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` under `name`, replacing any handler of that name.
    pub fn register(&mut self, name: impl Into<String>, handler: impl Handler) -> &mut Self {
        self.handlers.insert(name.into(), Arc::new(handler));
        self
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Handler>> {
        self.handlers.get(name).cloned()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}
