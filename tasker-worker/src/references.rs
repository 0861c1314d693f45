//! What a step message carries by reference — a task context too large to copy into every
//! message, the parent results of a step with many parents — fetched from the orchestrator
//! by the worker core before the handler runs, so handlers in every language see a complete
//! step and no broker message grows with the context or the fan-out.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;
use uuid::Uuid;

use tasker_client::Client;
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
    pub fn new(orchestrator_url: &str) -> Self {
        Self {
            client: Client::new(orchestrator_url),
            contexts: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether `message` carries anything by reference.
    pub fn needed(message: &StepMessage) -> bool {
        message.context_by_reference || message.parent_results_by_reference
    }

    /// Fills in what `message` carries by reference.
    pub async fn resolve(&self, message: &mut StepMessage) -> Result<(), tasker_client::Error> {
        if message.context_by_reference {
            message.context = self.context(message.task_id).await?;
            message.context_by_reference = false;
        }
        if message.parent_results_by_reference {
            let mut after = None;
            loop {
                let page = self
                    .client
                    .parent_results(message.task_id, message.step_id, after, PAGE)
                    .await?;
                message.parent_results.extend(page.parent_results);
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            message.parent_results_by_reference = false;
            ::metrics::counter!(crate::metrics::REFERENCES_FETCHED.name).increment(1);
        }
        Ok(())
    }

    async fn context(&self, task: Uuid) -> Result<Value, tasker_client::Error> {
        if let Some((_, c)) = self.lock().iter().find(|(id, _)| *id == task) {
            return Ok(c.clone());
        }
        let context = self.client.task(task, None).await?.context;
        ::metrics::counter!(crate::metrics::REFERENCES_FETCHED.name).increment(1);
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
