//! The handler contract, the same in every language: a handler is registered under a name,
//! receives a [`StepContext`] and returns a JSON value, a retryable error (retried by the
//! step's policy) or a permanent error (no retry).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::OnceCell;
use uuid::Uuid;

use tasker_shared::{Outcome, StepError, StepMessage};

use crate::references::ParentSource;
use crate::stream::{Emitter, StreamError};

/// What a handler receives.
#[derive(Debug, Clone)]
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
    /// Results of completed parent steps, by step name: `ctx.parent_results.all().await?`
    /// for all of them, `ctx.parent_results.each()` to read them one at a time.
    pub parent_results: ParentResults,
    /// A batch worker's batch (what its batchable parent returned for it).
    pub input: Option<Value>,
    /// How long the handler may run, from its start; past it the attempt fails with
    /// `timeout` (retryable) and the handler's future is dropped.
    pub timeout: Duration,
    /// When the handler started: the worker makes the context just before calling it.
    pub started: Instant,
    /// The step attempt's stream ([`StepContext::emit`]); `None` in a context made by hand.
    pub stream: Option<Emitter>,
}

impl StepContext {
    /// Whether the step is still this worker's to finish: within its timeout. A handler's
    /// future is dropped at the timeout anyway; work it handed elsewhere (`spawn_blocking`, a
    /// thread) checks this between units and gives up once it is `false`, since the outcome
    /// would be ignored. It does not extend the timeout. The same call as `heartbeat` in every
    /// language.
    pub fn heartbeat(&self) -> bool {
        self.started.elapsed() < self.timeout
    }

    /// Sends `data` (as JSON) on `topic` of the step's stream (docs/streams.md): readers of
    /// the task's stream get it within milliseconds, and it is kept for the task's retention.
    /// Never waits: the worker publishes chunks in batches. Fails if the chunk is invalid (a
    /// topic of 1 to 100 characters; at most 256 KiB), once the attempt has streamed
    /// `worker.max_stream_bytes` (the step then fails with `stream_too_large`), or after the
    /// attempt ended. `?` turns the error into a permanent failure of the step.
    pub fn emit(&self, topic: &str, data: impl serde::Serialize) -> Result<(), StreamError> {
        let data = serde_json::to_value(data)
            .map_err(|e| StreamError::Invalid(format!("its data is not JSON: {e}")))?;
        self.stream
            .as_ref()
            .ok_or(StreamError::Ended)?
            .emit(topic, data)
    }

    /// Sends `text` on `topic` of the step's stream: one chunk per call (a token of an LLM's
    /// answer, a line of a log). As [`StepContext::emit`] otherwise.
    pub fn emit_text(&self, topic: &str, text: impl AsRef<str>) -> Result<(), StreamError> {
        self.stream
            .as_ref()
            .ok_or(StreamError::Ended)?
            .emit_text(topic, text.as_ref())
    }
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
            parent_results: m.parent_results.into(),
            input: m.input,
            timeout: Duration::from_millis(m.timeout_ms),
            started: Instant::now(),
            stream: None,
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
            parent_results: m.parent_results.clone().into(),
            input: m.input.clone(),
            timeout: Duration::from_millis(m.timeout_ms),
            started: Instant::now(),
            stream: None,
        }
    }
}

/// The results of a step's completed parents, by step name.
///
/// The step message carries them when they fit on one page (up to 2,000 parents and
/// `orchestrator.parent_page_bytes`); beyond that (the convergence step of a large fan-out)
/// they are read from the orchestrator when asked for. [`all`](Self::all) reads them all once
/// and keeps them; [`each`](Self::each) reads them a page at a time and keeps none, so a
/// handler that folds 100,000 parent results holds one page of them at a time.
#[derive(Debug, Clone, Default)]
pub struct ParentResults {
    /// All of them, unless `source` is set.
    carried: Map<String, Value>,
    source: Option<ParentSource>,
    all: Arc<OnceCell<Map<String, Value>>>,
}

impl From<Map<String, Value>> for ParentResults {
    fn from(carried: Map<String, Value>) -> Self {
        Self {
            carried,
            ..Self::default()
        }
    }
}

impl ParentResults {
    /// Parent results read from the orchestrator when asked for.
    pub fn from_source(source: ParentSource) -> Self {
        Self {
            source: Some(source),
            ..Self::default()
        }
    }

    /// Whether they are read from the orchestrator rather than carried by the step message.
    pub fn by_reference(&self) -> bool {
        self.source.is_some()
    }

    /// All of them, by step name (read on the first call if they are not carried).
    pub async fn all(&self) -> Result<&Map<String, Value>, HandlerError> {
        if self.source.is_none() {
            return Ok(&self.carried);
        }
        self.all
            .get_or_try_init(|| async {
                let mut all = Map::new();
                let mut each = self.each();
                while let Some((name, result)) = each.next().await? {
                    all.insert(name, result);
                }
                Ok(all)
            })
            .await
    }

    /// One at a time, a page at a time (pages follow the parents' ids):
    /// `while let Some((name, result)) = each.next().await? { … }`.
    pub fn each(&self) -> EachParentResult<'_> {
        EachParentResult {
            results: self,
            carried: self.carried.iter(),
            page: Map::new().into_iter(),
            after: None,
            done: false,
        }
    }
}

/// Reads [`ParentResults`] one at a time; see [`ParentResults::each`].
#[derive(Debug)]
pub struct EachParentResult<'a> {
    results: &'a ParentResults,
    carried: serde_json::map::Iter<'a>,
    page: serde_json::map::IntoIter,
    after: Option<Uuid>,
    done: bool,
}

impl EachParentResult<'_> {
    /// The next parent's name and result; `None` after the last. Fails (retryably) if the
    /// orchestrator cannot be reached.
    pub async fn next(&mut self) -> Result<Option<(String, Value)>, HandlerError> {
        match &self.results.source {
            None => Ok(self
                .carried
                .next()
                .map(|(name, result)| (name.clone(), result.clone()))),
            Some(source) => self.next_page(source).await,
        }
    }

    /// The next entry of the current page, reading the next page when it is used up.
    async fn next_page(
        &mut self,
        source: &ParentSource,
    ) -> Result<Option<(String, Value)>, HandlerError> {
        loop {
            if let Some(entry) = self.page.next() {
                return Ok(Some(entry));
            }
            if self.done {
                return Ok(None);
            }
            let page = source.page(self.after).await.map_err(|e| {
                HandlerError::retryable(
                    "reference_unavailable",
                    format!("cannot read the step's parent results from the orchestrator: {e}"),
                )
            })?;
            self.done = page.next.is_none();
            self.after = page.next;
            self.page = page.parent_results.into_iter();
        }
    }
}

/// A handler failure: retryable (the step's policy decides when and whether it runs again,
/// unless the handler names its own delay) or permanent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerError {
    /// Retried while the step's `max_attempts` allow: after `retry_after` if the handler asked
    /// for a delay, else after the step's backoff.
    Retryable {
        error: StepError,
        retry_after: Option<Duration>,
    },
    /// Ends the step (and its task) at once.
    Permanent(StepError),
}

impl HandlerError {
    /// A failure worth retrying, of `kind` (a short stable word: `rate_limited`, `transient`).
    pub fn retryable(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Retryable {
            error: StepError::new(kind, message),
            retry_after: None,
        }
    }

    /// A failure retrying cannot help, of `kind`.
    pub fn permanent(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Permanent(StepError::new(kind, message))
    }

    /// The next attempt after `delay` instead of the step's backoff (a rate limit's
    /// `Retry-After`, say), at most a day. No effect on a permanent failure.
    pub fn retry_after(self, delay: Duration) -> Self {
        match self {
            Self::Retryable { error, .. } => Self::Retryable {
                error,
                retry_after: Some(delay),
            },
            permanent => permanent,
        }
    }

    /// What went wrong.
    pub fn error(&self) -> &StepError {
        match self {
            Self::Retryable { error, .. } | Self::Permanent(error) => error,
        }
    }
}

impl From<StreamError> for HandlerError {
    fn from(e: StreamError) -> Self {
        HandlerError::permanent(e.kind(), e.to_string())
    }
}

impl From<HandlerError> for Outcome {
    fn from(e: HandlerError) -> Self {
        match e {
            HandlerError::Retryable { error, retry_after } => Outcome::Failure {
                error,
                retryable: true,
                retry_after_ms: retry_after.map(|d| {
                    u64::try_from(d.as_millis())
                        .unwrap_or(u64::MAX)
                        .min(tasker_shared::message::MAX_RETRY_AFTER_MS)
                }),
            },
            HandlerError::Permanent(error) => Outcome::failure(error, false),
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retryable { error: e, .. } => write!(f, "retryable {}: {}", e.kind, e.message),
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

/// A second handler registered under a name already taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a handler named {0:?} is already registered")]
pub struct DuplicateHandler(pub String);

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

    /// Registers `handler` under `name`.
    ///
    /// # Panics
    /// If a handler of that name is already registered: two handlers for one name is a
    /// mistake in the program, found when it starts (as in every language). Use
    /// [`try_register`](Self::try_register) to handle it instead.
    pub fn register(&mut self, name: impl Into<String>, handler: impl Handler) -> &mut Self {
        match self.try_register(name, handler) {
            Ok(registry) => registry,
            Err(e) => panic!("{e}"),
        }
    }

    /// Registers `handler` under `name`, or says that the name is taken (and changes nothing).
    pub fn try_register(
        &mut self,
        name: impl Into<String>,
        handler: impl Handler,
    ) -> Result<&mut Self, DuplicateHandler> {
        match self.handlers.entry(name.into()) {
            std::collections::hash_map::Entry::Occupied(e) => {
                Err(DuplicateHandler(e.key().clone()))
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(Arc::new(handler));
                Ok(self)
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Handler>> {
        self.handlers.get(name).cloned()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ok(_: StepContext) -> Result<Value, HandlerError> {
        Ok(Value::Null)
    }

    #[test]
    fn a_second_handler_under_one_name_is_refused_and_changes_nothing() {
        let mut registry = Registry::new();
        registry.register("a", ok);
        assert_eq!(
            registry.try_register("a", ok).err(),
            Some(DuplicateHandler("a".into()))
        );
        assert_eq!(registry.names().collect::<Vec<_>>(), ["a"]);
        assert!(registry.try_register("b", ok).is_ok());
    }

    #[test]
    #[should_panic(expected = "a handler named \"a\" is already registered")]
    fn register_panics_on_a_duplicate_name() {
        Registry::new().register("a", ok).register("a", ok);
    }
}
