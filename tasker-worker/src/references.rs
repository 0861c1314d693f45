//! What a step message carries by reference — a task context too large to copy into every
//! message, the parent results of a step with many parents — fetched from the orchestrator
//! by the worker core before the handler runs, so handlers in every language see a complete
//! step and no broker message grows with the context or the fan-out.
//!
//! Parent results that fit on one page are fetched before the handler runs, like the context.
//! More than that (the convergence step of a large fan-out) stay with the orchestrator: the
//! handler reads them through a [`ParentSource`], one page at a time if it iterates them
//! ([`crate::handler::ParentResults`]), so the worker never has to hold them all at once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;
use uuid::Uuid;

use tasker_client::{Client, ParentResults};
use tasker_shared::StepMessage;

/// Parent results read per request.
const PAGE: u32 = 2_000;

/// Contexts kept, most recent last: a fan-out's steps share one task's context.
const CONTEXTS_KEPT: usize = 16;

/// Fetches references from one orchestrator, caching recent task contexts.
#[derive(Debug)]
pub struct References {
    client: Client,
    contexts: Mutex<VecDeque<(Uuid, Value)>>,
}

impl References {
    /// The worker's client of the orchestrator (its token and CA file), built once.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn new(client: Client) -> Self {
        Self {
            client,
            contexts: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether `message` carries anything by reference.
    pub fn needed(message: &StepMessage) -> bool {
        message.context_by_reference || message.parent_results_by_reference
    }

    /// Fills in what `message` carries by reference: the context, and parent results that fit
    /// on one page. Parent results over a page stay flagged in the message
    /// (`parent_results_by_reference`); the handler reads them through a [`ParentSource`].
    pub async fn resolve(&self, message: &mut StepMessage) -> Result<(), tasker_client::Error> {
        if message.context_by_reference {
            message.context = self.context(message.task_id).await?;
            message.context_by_reference = false;
        }
        if message.parent_results_by_reference {
            let first = self
                .parent_results(message.task_id, message.step_id, None)
                .await?;
            if first.next.is_none() {
                message.parent_results = first.parent_results;
                message.parent_results_by_reference = false;
            }
        }
        Ok(())
    }

    /// One page of `step`'s parent results, starting after the parent `after`.
    pub async fn parent_results(
        &self,
        task: Uuid,
        step: Uuid,
        after: Option<Uuid>,
    ) -> Result<ParentResults, tasker_client::Error> {
        fetched(self.client.parent_results(task, step, after, PAGE).await)
    }

    /// The same page as JSON text, for a binding whose language parses it itself.
    pub async fn parent_results_text(
        &self,
        task: Uuid,
        step: Uuid,
        after: Option<Uuid>,
    ) -> Result<ParentResults<Box<RawValue>>, tasker_client::Error> {
        fetched(
            self.client
                .parent_results_text(task, step, after, PAGE)
                .await,
        )
    }

    async fn context(&self, task: Uuid) -> Result<Value, tasker_client::Error> {
        if let Some((_, c)) = self.lock().iter().find(|(id, _)| *id == task) {
            return Ok(c.clone());
        }
        let context = fetched(self.client.task(task, None).await)?.context;
        let mut kept = self.lock();
        if kept.len() >= CONTEXTS_KEPT {
            kept.pop_front();
        }
        kept.push_back((task, context.clone()));
        Ok(context)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Uuid, Value)>> {
        self.contexts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counts a reference fetched.
fn fetched<T>(answer: Result<T, tasker_client::Error>) -> Result<T, tasker_client::Error> {
    if answer.is_ok() {
        ::metrics::counter!(crate::metrics::REFERENCES_FETCHED.name).increment(1);
    }
    answer
}

/// Where one step's parent results are read when its message carries them by reference.
#[derive(Debug, Clone)]
pub struct ParentSource {
    references: Arc<References>,
    pub task: Uuid,
    pub step: Uuid,
}

impl ParentSource {
    pub fn new(references: Arc<References>, task: Uuid, step: Uuid) -> Self {
        Self {
            references,
            task,
            step,
        }
    }

    /// The page after the parent `after` (from the first with `None`).
    pub async fn page(&self, after: Option<Uuid>) -> Result<ParentResults, tasker_client::Error> {
        self.references
            .parent_results(self.task, self.step, after)
            .await
    }
}
