//! What a successful result must look like for its step's type: a decision names some of its
//! branches, a batchable step lists its batches. The engine holds handler results (and results
//! supplied by hand) to this rule in `tasker_result_problem` (SQL); this is its reference in
//! Rust, used where no database is at hand (a handler test, `tasker_worker::testing`). A test
//! checks that the two agree.

use serde_json::Value;

use crate::{StepError, StepType};

/// The permanent error a successful `result` of a step of this type turns into, or `None` if
/// the engine can use it.
pub fn problem(step_type: StepType, branches: &[String], result: &Value) -> Option<StepError> {
    match step_type {
        StepType::Decision => {
            let usable = result
                .get("branches")
                .and_then(Value::as_array)
                .is_some_and(|chosen| {
                    chosen
                        .iter()
                        .all(|c| c.as_str().is_some_and(|c| branches.iter().any(|b| b == c)))
                });
            (!usable).then(|| {
                let chosen = result
                    .get("branches")
                    .map_or_else(|| "no branches".to_owned(), Value::to_string);
                StepError::new(
                    "invalid_decision",
                    format!(
                        "a decision step must return {{\"branches\": [...]}} naming some of {}; got {chosen}",
                        serde_json::to_string(branches).unwrap_or_default()
                    ),
                )
            })
        }
        StepType::Batchable if !result.get("batches").is_some_and(Value::is_array) => {
            Some(StepError::new(
                "invalid_batches",
                "a batchable step must return {\"batches\": [...]}, one entry per batch",
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_decision_names_only_its_branches_and_a_batchable_step_lists_batches() {
        let branches = ["small".to_owned(), "large".to_owned()];
        let decision = |r: Value| problem(StepType::Decision, &branches, &r).map(|e| e.kind);
        assert_eq!(decision(json!({"branches": ["small"]})), None);
        assert_eq!(decision(json!({"branches": []})), None);
        for bad in [
            json!({"branches": ["medium"]}),
            json!({"branches": "small"}),
            json!({"branches": [1]}),
            json!({}),
            json!([1]),
        ] {
            assert_eq!(decision(bad).as_deref(), Some("invalid_decision"));
        }
        let batchable = |r: Value| problem(StepType::Batchable, &[], &r).map(|e| e.kind);
        assert_eq!(batchable(json!({"batches": []})), None);
        assert_eq!(
            batchable(json!({"batches": {}})).as_deref(),
            Some("invalid_batches")
        );
        assert_eq!(problem(StepType::Standard, &[], &json!(null)), None);
    }
}
