//! What the worker core keeps of a step attempt while a handler has it: enough to time it,
//! label its metrics, trace it and build its result.

use chrono::Utc;
use tasker_shared::StepMessage;
use tasker_telemetry::{Span, attr};

/// What the core keeps of a job while a handler has it (the message itself went to the host).
pub(super) struct Attempt {
    pub(super) task_id: uuid::Uuid,
    pub(super) step_id: uuid::Uuid,
    pub(super) attempt: u32,
    pub(super) timeout_ms: u64,
    /// The step's trace context and name, when it was dispatched with tracing on.
    pub(super) trace: Option<Box<(String, String)>>,
    /// When the orchestrator dispatched it (its clock).
    pub(super) dispatched_at: chrono::DateTime<Utc>,
    /// Its namespace, template and handler: the labels of its latency metrics (sets as bounded
    /// as the templates registered).
    pub(super) names: [String; 3],
}

impl From<&StepMessage> for Attempt {
    fn from(m: &StepMessage) -> Self {
        Attempt {
            task_id: m.task_id,
            step_id: m.step_id,
            attempt: m.attempt,
            timeout_ms: m.timeout_ms,
            trace: m
                .traceparent
                .clone()
                .map(|t| Box::new((t, m.step_name.clone()))),
            dispatched_at: m.dispatched_at,
            names: [m.namespace.clone(), m.task_name.clone(), m.handler.clone()],
        }
    }
}

impl Attempt {
    /// The labels of its latency metrics.
    pub(super) fn labels(&self) -> Vec<metrics::Label> {
        let [namespace, template, handler] = &self.names;
        vec![
            metrics::Label::new("namespace", namespace.clone()),
            metrics::Label::new("template", template.clone()),
            metrics::Label::new("handler", handler.clone()),
        ]
    }

    /// A span of this attempt, a child of `parent` (else of its dispatch span); `None` when
    /// the step came without trace context.
    pub(super) fn span(&self, name: &'static str, parent: Option<&Span>) -> Option<Span> {
        let trace = self.trace.as_deref()?;
        let parent = parent.map_or_else(|| trace.0.clone(), Span::traceparent);
        Span::start(
            name,
            Some(&parent),
            vec![
                attr("tasker.task_id", self.task_id.to_string()),
                attr("tasker.step_id", self.step_id.to_string()),
                attr("tasker.step", trace.1.clone()),
                attr("tasker.attempt", i64::from(self.attempt)),
            ],
        )
    }
}
