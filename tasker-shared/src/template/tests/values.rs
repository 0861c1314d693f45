//! Templates refused for what their values are: out of their bounds, text with control
//! characters, files too large to parse, composition keys out of place.

use super::*;

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
