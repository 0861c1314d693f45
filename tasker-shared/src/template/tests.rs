use std::path::Path;

use super::*;
use crate::RetryPolicy;
use serde_json::json;

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

/// The field an `InvalidField` error names, and the line it points at.
fn invalid_field(src: &str) -> (String, Option<usize>, String) {
    let err = load_err(src);
    match err.kind {
        ErrorKind::InvalidField { field, problem } => (field, err.line, problem),
        other => panic!("expected an invalid field, got {other:?}"),
    }
}

#[test]
fn every_bounded_value_is_refused_out_of_range_with_file_line_and_field() {
    // Values that once overflowed a column, a timer or a timestamp further down the line.
    let cases = [
        (
            "retry: { max_attempts: 3000000000 }",
            "steps.right.retry.max_attempts",
        ),
        (
            "retry: { max_attempts: 0 }",
            "steps.right.retry.max_attempts",
        ),
        (
            "retry: { base_ms: 10, max_ms: 100000000000 }",
            "steps.right.retry.max_ms",
        ),
        ("timeout_seconds: 100000000", "steps.right.timeout_seconds"),
        (
            "timeout_seconds: 10000000000000",
            "steps.right.timeout_seconds",
        ),
        (
            "queue_timeout_seconds: 0",
            "steps.right.queue_timeout_seconds",
        ),
        (
            "queue_timeout_seconds: 2592001",
            "steps.right.queue_timeout_seconds",
        ),
        ("handler: \"dou\\0ble\"", "steps.right.handler"),
        ("handler: \"dou\\x1bble\"", "steps.right.handler"),
    ];
    let right = DIAMOND
        .lines()
        .position(|l| l.contains("name: right"))
        .unwrap()
        + 1;
    for (setting, field) in cases {
        let src = if setting.starts_with("handler") {
            DIAMOND.replace(
                "  - name: right\n    handler: double\n",
                &format!("  - name: right\n    {setting}\n"),
            )
        } else {
            DIAMOND.replace("    timeout_seconds: 5\n", &format!("    {setting}\n"))
        };
        let (got, line, problem) = invalid_field(&src);
        assert_eq!(got, field, "{setting}: {problem}");
        assert_eq!(line, Some(right), "{setting}: the line of `- name: right`");
    }
    // At the limits, everything loads.
    let src = DIAMOND.replace(
        "    timeout_seconds: 5\n",
        "    timeout_seconds: 2592000\n    queue_timeout_seconds: 2592000\n    retry: { max_attempts: 1000, base_ms: 86400000, max_ms: 86400000 }\n",
    );
    TaskTemplate::load(&src, "t.yaml").unwrap();
}

#[test]
fn text_with_nul_or_control_characters_is_refused() {
    let (field, _, problem) =
        invalid_field(&DIAMOND.replace("description: four steps", "description: \"a\\0b\""));
    assert_eq!(field, "description");
    assert!(problem.contains("U+0000"), "{problem}");
    let (field, _, problem) = invalid_field(&DIAMOND.replace(
        "    value: { type: integer }",
        "    value: { type: integer, description: \"x\\0\" }",
    ));
    assert_eq!(field, "context_schema");
    assert!(problem.contains("NUL"), "{problem}");
    // Newlines and tabs in a description are fine.
    TaskTemplate::load(
        &DIAMOND.replace(
            "description: four steps",
            "description: \"four\\n\\tsteps\"",
        ),
        "t.yaml",
    )
    .unwrap();
}

#[test]
fn oversized_templates_are_refused_before_parsing() {
    // ~400 kB: far more steps than a template may have.
    let mut src = String::from("namespace: n\nname: big\nversion: '1'\nsteps:\n");
    for i in 0..8_000 {
        src.push_str(&format!(
            "  - name: s{i}\n    handler: h\n    depends_on: [s{}]\n",
            i.max(1) - 1
        ));
    }
    let src = src.replacen("    depends_on: [s0]\n", "\n", 1);
    let (field, _, problem) = invalid_field(&src);
    assert_eq!(field, "steps");
    assert!(problem.contains("1000"), "{problem}");
    let huge = format!("{src}#{}\n", "x".repeat(limits::MAX_SOURCE_BYTES));
    let (field, _, _) = invalid_field(&huge);
    assert_eq!(field, "(file)");
}

#[test]
fn composition_keys_are_checked_with_file_line_and_field() {
    let template = |step: &str| {
        format!(
            "namespace: n\nname: c\nversion: '1'\nsteps:\n  - name: first\n    handler: h\n{step}"
        )
    };
    // A namespace that cannot form a queue name.
    let (field, line, problem) = invalid_field(&template(
        "  - name: routed\n    namespace: 'no way!'\n    handler: h\n",
    ));
    assert_eq!(field, "steps.routed.namespace");
    assert_eq!(line, Some(7));
    assert!(problem.contains("no way!"), "{problem}");
    // A child context pointer into a step that is not a dependency.
    let (field, line, _) = invalid_field(&template(
        "  - name: kid\n    child: {template: t, context: {x: /parents/other/v}}\n    depends_on: [first]\n",
    ));
    assert_eq!(
        (field.as_str(), line),
        ("steps.kid.child.context.x", Some(7))
    );
    // Not a pointer at all.
    let (field, _, _) = invalid_field(&template(
        "  - name: kid\n    child: {template: t, context: results}\n",
    ));
    assert_eq!(field, "steps.kid.child.context");
    // A child step names no handler, waits for nothing and goes to no worker.
    for (extra, field) in [
        ("    handler: h\n", "steps.kid.handler"),
        ("    wait: {sleep: 1s}\n", "steps.kid.child"),
        ("    namespace: elsewhere\n", "steps.kid.namespace"),
        (
            "    queue_timeout_seconds: 5\n",
            "steps.kid.queue_timeout_seconds",
        ),
    ] {
        let (got, _, _) = invalid_field(&template(&format!(
            "  - name: kid\n    child: {{template: t}}\n{extra}"
        )));
        assert_eq!(got, field, "{extra}");
    }
    // A child step's engine form, and the queue timeout a step routed elsewhere gets.
    let t = TaskTemplate::load(
        &template(
            "  - name: kid\n    child: {template: t, version: '2', on_parent_cancel: abandon}\n  - name: far\n    namespace: other\n    handler: h\n",
        ),
        "t.yaml",
    )
    .unwrap();
    let kid = &t.template.steps[1];
    assert_eq!(kid.engine_type(), StepType::Child);
    assert_eq!(kid.engine_handler(), crate::compose::CHILD_HANDLER);
    let far = &t.template.steps[2];
    assert_eq!(
        super::queue_timeout_seconds(far, "n"),
        Some(crate::compose::CROSS_NAMESPACE_QUEUE_TIMEOUT_SECONDS)
    );
    assert_eq!(
        super::queue_timeout_seconds(&t.template.steps[0], "n"),
        None
    );
    assert_eq!(
        crate::template::served_namespaces(std::slice::from_ref(&t), Some(&["h".to_owned()])),
        vec!["n".to_owned(), "other".to_owned()]
    );
    assert_eq!(
        crate::template::served_namespaces(std::slice::from_ref(&t), Some(&["x".to_owned()])),
        Vec::<String>::new()
    );
}
