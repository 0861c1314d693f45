//! Where a template's work goes: the namespace of each step's queue, every namespace a task of
//! it puts work into by itself, and how long a step may wait for a worker.

use super::{StepTemplate, TaskTemplate};
use crate::compose::CROSS_NAMESPACE_QUEUE_TIMEOUT_SECONDS;

/// The namespace of a step's queue: its own, or its template's.
pub fn step_namespace<'a>(step: &'a StepTemplate, template_namespace: &'a str) -> &'a str {
    step.namespace.as_deref().unwrap_or(template_namespace)
}

/// The namespaces a task of `template` puts work into by itself, each with how (for a message
/// that says why a token falls short): the template's own, each step's `namespace:`, each
/// child step's template's. The child templates' own reach is the registry's to add
/// (`tasker_orchestration::reach`), since a child is pinned only when its task is created.
pub fn reach(template: &TaskTemplate) -> std::collections::BTreeMap<String, String> {
    let mut reached = std::collections::BTreeMap::new();
    reached.insert(
        template.namespace.clone(),
        format!("template {}", template.key()),
    );
    for step in &template.steps {
        if let Some(ns) = &step.namespace {
            reached
                .entry(ns.clone())
                .or_insert_with(|| format!("step {:?} of {}", step.name, template.key()));
        }
        if let Some(child) = &step.child {
            let ns = child.namespace.as_deref().unwrap_or(&template.namespace);
            reached.entry(ns.to_owned()).or_insert_with(|| {
                format!(
                    "child step {:?} of {}, which starts {ns}/{}",
                    step.name,
                    template.key(),
                    child.template
                )
            });
        }
    }
    reached
}

/// How long a step may wait for a worker: its own `queue_timeout_seconds`, else
/// [`CROSS_NAMESPACE_QUEUE_TIMEOUT_SECONDS`] for a step routed to another namespace than its
/// template's, else none (it waits as long as it takes).
pub fn queue_timeout_seconds(step: &StepTemplate, template_namespace: &str) -> Option<u64> {
    step.queue_timeout_seconds.or_else(|| {
        step.namespace
            .as_deref()
            .filter(|ns| *ns != template_namespace)
            .map(|_| CROSS_NAMESPACE_QUEUE_TIMEOUT_SECONDS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_reaches_its_own_its_steps_and_its_childrens_namespaces() {
        let t = TaskTemplate::load(
            "namespace: a\nname: t\nversion: '1'\nsteps:\n  - name: x\n    handler: h\n  \
             - name: y\n    handler: h\n    namespace: b\n  - name: z\n    \
             child: {template: victim, namespace: c}\n  - name: w\n    \
             child: {template: own}\n",
            "t.yaml",
        )
        .unwrap()
        .template;
        let reached = reach(&t);
        assert_eq!(
            reached.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert!(reached["b"].contains("step \"y\""), "{}", reached["b"]);
        assert!(reached["c"].contains("c/victim"), "{}", reached["c"]);
    }
}
