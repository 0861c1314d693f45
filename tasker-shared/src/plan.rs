//! What a new task's steps and edges are: the template's steps minus `batch_worker` templates (those
//! are instantiated when their batchable parent returns its batches), with each batch worker's
//! children wired to the batchable step instead, so they wait for it and then for every batch.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::template::Loaded;
use crate::{StepTemplate, StepType};

/// The steps and edges to create, by index into the template's step list.
#[derive(Debug, PartialEq)]
pub struct Plan {
    /// Template indices of the steps created with the task.
    pub steps: Vec<usize>,
    /// `(parent, child)` edges between created steps.
    pub edges: Vec<(usize, usize)>,
    /// Parents of each step, by template index (counted once from `edges`).
    parent_counts: Vec<usize>,
}

impl Plan {
    pub fn new(loaded: &Loaded) -> Plan {
        let t = &loaded.template;
        let dag = &loaded.dag;
        let is_worker = |i: usize| t.steps[i].step_type == StepType::BatchWorker;
        let steps = (0..t.steps.len()).filter(|&i| !is_worker(i)).collect();
        let mut edges = BTreeSet::new();
        for (p, c) in dag.edges() {
            if is_worker(c) {
                continue;
            }
            // A batch worker has exactly one (batchable) parent: validated with the template.
            let p = if is_worker(p) { dag.parents(p)[0] } else { p };
            edges.insert((p, c));
        }
        let mut parent_counts = vec![0; t.steps.len()];
        for &(_, c) in &edges {
            parent_counts[c] += 1;
        }
        Plan {
            steps,
            edges: edges.into_iter().collect(),
            parent_counts,
        }
    }

    pub fn parent_count(&self, step: usize) -> usize {
        self.parent_counts[step]
    }

    /// For a batchable step: how to instantiate its batch worker.
    pub fn batch_spec(loaded: &Loaded, step: usize) -> Option<Value> {
        let t = &loaded.template;
        if t.steps[step].step_type != StepType::Batchable {
            return None;
        }
        let worker = loaded
            .dag
            .children(step)
            .iter()
            .copied()
            .find(|&c| t.steps[c].step_type == StepType::BatchWorker)?;
        let w: &StepTemplate = &t.steps[worker];
        let children: Vec<&str> = loaded
            .dag
            .children(worker)
            .iter()
            .map(|&c| t.steps[c].name.as_str())
            .collect();
        Some(json!({
            "name": w.name,
            "handler": w.handler,
            "max_attempts": w.retry.max_attempts,
            "backoff": w.retry.backoff.as_str(),
            "base_ms": w.retry.base_ms,
            "max_ms": w.retry.max_ms,
            "timeout_ms": w.timeout_seconds.saturating_mul(1000),
            "queue_timeout_ms": crate::template::queue_timeout_seconds(w, &t.namespace)
                .map(|s| s.saturating_mul(1000)),
            "namespace": w.namespace,
            "on_failure": w.on_failure.as_str(),
            "children": children,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::TaskTemplate;

    #[test]
    fn batch_worker_is_not_created_and_its_children_hang_off_the_batchable_step() {
        let src = "namespace: n
name: b
version: '1'
steps:
  - name: split
    type: batchable
    handler: s
  - name: work
    type: batch_worker
    handler: w
    depends_on: [split]
    on_failure: continue
  - name: total
    type: convergence
    handler: t
    depends_on: [work, split]
";
        let loaded = TaskTemplate::load(src, "b.yaml").unwrap();
        let plan = Plan::new(&loaded);
        assert_eq!(plan.steps, vec![0, 2]);
        assert_eq!(
            plan.edges,
            vec![(0, 2)],
            "work -> total becomes split -> total, once"
        );
        assert_eq!(plan.parent_count(2), 1);
        let spec = Plan::batch_spec(&loaded, 0).unwrap();
        assert_eq!(spec["name"], "work");
        assert_eq!(spec["on_failure"], "continue");
        assert_eq!(spec["children"], json!(["total"]));
        assert!(Plan::batch_spec(&loaded, 2).is_none());
    }
}
