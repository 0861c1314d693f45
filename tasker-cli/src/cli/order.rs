//! Steps in graph order: a parent before its children, by depth in the template's DAG (then as
//! the template lists them), a batch worker's instances (`process#0`, `process#1`, …) in
//! numeric order where their template step is.

use std::collections::HashMap;

use tasker_client::Step;
use tasker_shared::TaskTemplate;
use tasker_shared::dag::Dag;

/// Sorts `steps` in the graph order of `template`; steps it does not name go last, as they were.
pub(super) fn graph_order(template: &TaskTemplate, steps: &mut [Step]) {
    let Ok(dag) = Dag::build(
        template
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s.depends_on.iter().map(String::as_str))),
    ) else {
        return;
    };
    let depths = dag.depths();
    let rank: HashMap<&str, (usize, usize)> = (0..dag.len())
        .map(|i| (dag.name(i), (depths[i], i)))
        .collect();
    let key = |s: &Step| {
        let (base, instance) = match s.name.rsplit_once('#') {
            Some((base, n)) => (base, n.parse::<u64>().ok()),
            None => (s.name.as_str(), None),
        };
        let (depth, index) = rank.get(base).copied().unwrap_or((usize::MAX, usize::MAX));
        (depth, index, instance)
    };
    steps.sort_by_key(|s| key(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str) -> Step {
        serde_json::from_value(serde_json::json!({
            "id": uuid::Uuid::now_v7(), "name": name, "handler": "h", "step_type": "standard",
            "state": "completed", "attempt": 1, "max_attempts": 3, "result": null, "error": null,
            "worker": null, "created_at": "2026-01-01T00:00:00Z", "dispatched_at": null,
            "started_at": null, "finished_at": null, "processed_at": null,
        }))
        .expect("a step")
    }

    #[test]
    fn parents_come_before_children_and_instances_in_numeric_order() {
        let template: TaskTemplate = serde_json::from_value(serde_json::json!({
            "namespace": "a", "name": "b", "version": "1", "steps": [
                {"name": "sum", "handler": "h", "type": "convergence", "depends_on": ["work"]},
                {"name": "split", "handler": "h", "type": "batchable"},
                {"name": "work", "handler": "h", "type": "batch_worker", "depends_on": ["split"]},
            ]
        }))
        .expect("a template");
        let mut steps: Vec<Step> = ["sum", "work#10", "work#2", "split", "work#0"]
            .into_iter()
            .map(step)
            .collect();
        graph_order(&template, &mut steps);
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["split", "work#0", "work#2", "work#10", "sum"]);
    }
}
