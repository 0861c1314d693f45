use std::path::Path;

use super::*;
use crate::RetryPolicy;
use serde_json::json;

/// Values out of their bounds, unsafe text, oversized files and composition keys.
mod values;

const DIAMOND: &str = "\
namespace: demo
name: diamond
version: 1.0.0
description: four steps
context_schema:
  type: object
  required: [value]
  properties:
    value: { type: integer }
steps:
  - name: start
    handler: add_one
  - name: left
    handler: double
    depends_on: [start]
    retry: { max_attempts: 5, backoff: linear, base_ms: 10, max_ms: 100 }
  - name: right
    handler: double
    depends_on: [start]
    timeout_seconds: 5
  - name: join
    handler: sum_parents
    depends_on: [left, right]
";

fn load_err(src: &str) -> Error {
    TaskTemplate::load(src, "t.yaml").unwrap_err()
}

#[test]
fn parses_a_valid_template_with_defaults() {
    let t = TaskTemplate::load(DIAMOND, "t.yaml").unwrap();
    assert_eq!(t.template.key(), "demo/diamond@1.0.0");
    assert_eq!(t.template.steps.len(), 4);
    let left = &t.template.steps[1];
    assert_eq!(left.retry.max_attempts, 5);
    assert_eq!(left.retry.backoff, crate::Backoff::Linear);
    assert_eq!(left.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    assert_eq!(t.template.steps[2].timeout_seconds, 5);
    assert_eq!(t.template.steps[0].retry, RetryPolicy::default());
    assert_eq!(t.dag.roots().collect::<Vec<_>>(), vec![0]);
    assert_eq!(t.dag.parents(3), &[1, 2]);
}

#[test]
fn context_is_checked_against_the_schema() {
    let t = TaskTemplate::load(DIAMOND, "t.yaml").unwrap();
    assert!(t.check_context(&json!({"value": 3})).is_ok());
    let problems = t.check_context(&json!({"value": "three"})).unwrap_err();
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("/value"), "{problems:?}");
    let problems = t.check_context(&json!({})).unwrap_err();
    assert!(problems[0].contains("value"), "{problems:?}");
}

#[test]
fn empty_file_is_rejected() {
    for src in ["", "\n# only a comment\n", "---\n"] {
        assert_eq!(load_err(src).kind, ErrorKind::Empty, "{src:?}");
    }
}

#[test]
fn syntax_error_has_a_line_and_column() {
    let err = load_err("namespace: a\nname: b\nversion: 1\nsteps:\n  - name: [unclosed\n");
    assert!(matches!(err.kind, ErrorKind::Syntax(_)), "{err}");
    assert_eq!((err.line, err.column), (Some(5), Some(11)), "{err}");
    assert!(
        err.to_string().starts_with("t.yaml:5:11: invalid YAML"),
        "{err}"
    );
}

/// A problem found after parsing points at the step's line and column, from the parser's own
/// positions: in block style at its first key, in flow style at its `{`, on any line.
#[test]
fn step_problems_have_the_parsers_line_and_column_in_block_and_flow_style() {
    let block = "namespace: a\nname: b\nversion: '1'\nsteps:\n  - name: x\n    handler: h\n  -   name: y\n      handler: h\n      depends_on: [nope]\n";
    let err = load_err(block);
    assert_eq!((err.line, err.column), (Some(7), Some(7)), "{err}");
    assert_eq!(
        err.to_string(),
        "t.yaml:7:7: step `y` depends on unknown step `nope`"
    );
    let flow = "namespace: a\nname: b\nversion: '1'\nsteps: [{name: x, handler: h},\n        {handler: h, name: y, depends_on: [nope]}]\n";
    let err = load_err(flow);
    assert_eq!((err.line, err.column), (Some(5), Some(9)), "{err}");
    // Everything on one line, and a cycle: at its first step.
    let one_line = "{namespace: a, name: b, version: '1', steps: [{name: x, handler: h, depends_on: [y]}, {name: y, handler: h, depends_on: [x]}]}";
    let err = load_err(one_line);
    assert!(matches!(err.kind, ErrorKind::Cycle(_)), "{err}");
    assert_eq!(err.line, Some(1), "{err}");
    assert!(err.column.is_some_and(|c| c == 47 || c == 86), "{err}");
}

#[test]
fn unknown_field_is_a_syntax_error_naming_it() {
    let err = load_err("namespace: a\nname: b\nversion: '1'\nstepz: []\n");
    assert!(err.to_string().contains("stepz"), "{err}");
}

#[test]
fn no_steps_is_rejected() {
    let err = load_err("namespace: a\nname: b\nversion: '1'\nsteps: []\n");
    assert_eq!(err.kind, ErrorKind::NoSteps);
}

#[test]
fn duplicate_step_names_both_lines() {
    let src = "namespace: a\nname: b\nversion: '1'\nsteps:\n  - name: x\n    handler: h\n  - name: y\n    handler: h\n  - name: x\n    handler: h\n";
    let err = load_err(src);
    assert_eq!(
        err.kind,
        ErrorKind::DuplicateStep {
            name: "x".into(),
            first_line: 5
        }
    );
    assert_eq!(err.line, Some(9));
}

#[test]
fn unknown_dependency_is_named_with_its_line() {
    let src = DIAMOND.replace("depends_on: [left, right]", "depends_on: [left, rihgt]");
    let err = load_err(&src);
    assert_eq!(
        err.kind,
        ErrorKind::UnknownDependency {
            step: "join".into(),
            dependency: "rihgt".into()
        }
    );
    assert_eq!(err.line, Some(21));
    assert_eq!(
        err.to_string(),
        "t.yaml:21:5: step `join` depends on unknown step `rihgt`"
    );
}

#[test]
fn cycle_is_named() {
    let src = DIAMOND.replace(
        "  - name: start\n    handler: add_one\n",
        "  - name: start\n    handler: add_one\n    depends_on: [join]\n",
    );
    let err = load_err(&src);
    match &err.kind {
        ErrorKind::Cycle(names) => {
            assert_eq!(names.first(), names.last());
            assert!(names.contains(&"start".to_string()) && names.contains(&"join".to_string()));
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert!(err.to_string().contains("dependency cycle: "), "{err}");
}

const CONDITIONAL: &str = "\
namespace: demo
name: cond
version: '1'
steps:
  - name: check
    handler: h
  - name: route
    type: decision
    handler: h
    depends_on: [check]
    branches: [small, large]
  - name: small
    handler: h
    depends_on: [route]
  - name: large
    handler: h
    depends_on: [route]
  - name: done
    type: convergence
    handler: h
    depends_on: [small, large]
";

#[test]
fn decision_template_is_valid() {
    let t = TaskTemplate::load(CONDITIONAL, "c.yaml").unwrap();
    assert_eq!(t.template.steps[1].step_type, StepType::Decision);
    assert_eq!(t.template.steps[4].step_type, StepType::Convergence);
}

#[test]
fn decision_with_unknown_branch_is_rejected() {
    let err = load_err(&CONDITIONAL.replacen("[small, large]", "[small, huge]", 1));
    assert_eq!(
        err.kind,
        ErrorKind::UnknownBranch {
            step: "route".into(),
            branch: "huge".into()
        }
    );
    assert_eq!(err.line, Some(7));
}

#[test]
fn decision_branch_must_be_a_child() {
    let err = load_err(&CONDITIONAL.replacen("[small, large]", "[small, check]", 1));
    assert_eq!(
        err.kind,
        ErrorKind::BranchNotChild {
            step: "route".into(),
            branch: "check".into()
        }
    );
}

#[test]
fn decision_needs_branches_and_only_decisions_have_them() {
    let err = load_err(&CONDITIONAL.replace("    branches: [small, large]\n", ""));
    assert_eq!(
        err.kind,
        ErrorKind::DecisionWithoutBranches {
            step: "route".into()
        }
    );
    let err = load_err(&CONDITIONAL.replace("    type: decision\n", ""));
    assert_eq!(
        err.kind,
        ErrorKind::BranchesOnNonDecision {
            step: "route".into()
        }
    );
}

#[test]
fn bad_policy_and_names_are_rejected() {
    let err = load_err(&DIAMOND.replace("max_attempts: 5", "max_attempts: 0"));
    assert!(
        err.to_string().contains("steps.left.retry.max_attempts"),
        "{err}"
    );
    let err = load_err(&DIAMOND.replace("base_ms: 10", "base_ms: 1000"));
    assert!(err.to_string().contains("retry.base_ms"), "{err}");
    let err = load_err(&DIAMOND.replace("namespace: demo", "namespace: 'de mo'"));
    assert!(err.to_string().contains("`namespace`"), "{err}");
    let err = load_err(&DIAMOND.replace("backoff: linear", "backoff: fibonacci"));
    assert!(matches!(err.kind, ErrorKind::Syntax(_)), "{err}");
}

#[test]
fn invalid_context_schema_is_rejected() {
    let src = DIAMOND.replace("value: { type: integer }", "value: { type: 12 }");
    let err = load_err(&src);
    assert!(matches!(err.kind, ErrorKind::ContextSchema(_)), "{err}");
}

#[test]
fn load_dir_reads_recursively_and_rejects_duplicates() {
    let dir = std::env::temp_dir().join(format!("tasker-tpl-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("a.yaml"), DIAMOND).unwrap();
    std::fs::write(dir.join("nested/b.yml"), CONDITIONAL).unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let loaded = load_dir(&dir).unwrap();
    assert_eq!(loaded.len(), 2);
    std::fs::write(dir.join("nested/copy.yaml"), DIAMOND).unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::DuplicateTemplate(_)), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fixture_templates_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/task_templates");
    let loaded = load_dir(&dir).unwrap();
    assert!(loaded.len() >= 5, "found {}", loaded.len());
}

const BATCH: &str = "\
namespace: demo
name: batch
version: '1'
steps:
  - name: split
    type: batchable
    handler: h
  - name: work
    type: batch_worker
    handler: h
    depends_on: [split]
    on_failure: continue
  - name: total
    type: convergence
    handler: h
    depends_on: [work]
";

#[test]
fn batch_template_is_valid() {
    let t = TaskTemplate::load(BATCH, "b.yaml").unwrap();
    assert_eq!(t.template.steps[1].step_type, StepType::BatchWorker);
    assert_eq!(t.template.steps[1].on_failure, FailurePolicy::Continue);
}

#[test]
fn batch_worker_needs_a_single_batchable_parent() {
    let src = BATCH.replace("    type: batchable\n", "");
    let err = load_err(&src);
    assert_eq!(
        err.kind,
        ErrorKind::BatchWorkerParent {
            step: "work".into()
        }
    );
}

#[test]
fn batchable_needs_exactly_one_batch_worker() {
    let src = BATCH
        .replace("    type: batch_worker\n", "")
        .replace("    on_failure: continue\n", "");
    let err = load_err(&src);
    assert_eq!(
        err.kind,
        ErrorKind::BatchableChildren {
            step: "split".into(),
            found: 0
        }
    );
}

#[test]
fn failure_policy_only_on_batch_workers() {
    let src = BATCH.replace(
        "    depends_on: [work]\n",
        "    depends_on: [work]\n    on_failure: continue\n",
    );
    let err = load_err(&src);
    assert_eq!(
        err.kind,
        ErrorKind::FailurePolicyOnNonBatch {
            step: "total".into()
        }
    );
}
