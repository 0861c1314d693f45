//! The checks of single fields: identifiers, free text, a step's policies.

use super::{ErrorKind, StepTemplate, limits};

pub use crate::names::is_identifier;

pub(super) fn check_identifier(field: &str, value: &str) -> Result<(), ErrorKind> {
    match crate::names::identifier_problem(value) {
        Some(problem) => Err(ErrorKind::InvalidField {
            field: field.to_owned(),
            problem: format!("{problem} (got {value:?})"),
        }),
        None => Ok(()),
    }
}

/// Free text (a handler name, a description): not empty where required, bounded, and free of
/// NUL and other control characters, which PostgreSQL or a log line would choke on.
pub(super) fn check_text(field: &str, value: &str) -> Result<(), ErrorKind> {
    let invalid = |problem: String| {
        Err(ErrorKind::InvalidField {
            field: field.to_owned(),
            problem,
        })
    };
    if value.chars().count() > limits::MAX_TEXT_CHARS {
        return invalid(format!(
            "must be at most {} characters",
            limits::MAX_TEXT_CHARS
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return invalid(format!(
            "must not contain control characters (found U+{:04X})",
            c as u32
        ));
    }
    Ok(())
}

pub(super) fn check_policy(step: &StepTemplate) -> Result<(), ErrorKind> {
    let invalid = |field: &str, problem: String| {
        Err(ErrorKind::InvalidField {
            field: format!("steps.{}.{field}", step.name),
            problem,
        })
    };
    if let Some(c) = &step.concurrency {
        c.check(&format!("steps.{}.concurrency", step.name))
            .map_err(flow_problem)?;
    }
    if let Some(r) = &step.rate_limit {
        r.check(&format!("steps.{}.rate_limit", step.name))
            .map_err(flow_problem)?;
    }
    let r = &step.retry;
    if !(1..=limits::MAX_ATTEMPTS).contains(&r.max_attempts) {
        return invalid(
            "retry.max_attempts",
            format!(
                "must be 1 to {} (got {})",
                limits::MAX_ATTEMPTS,
                r.max_attempts
            ),
        );
    }
    for (field, ms) in [("retry.base_ms", r.base_ms), ("retry.max_ms", r.max_ms)] {
        if ms > limits::MAX_BACKOFF_MS {
            return invalid(
                field,
                format!(
                    "must be at most {} (one day; got {ms})",
                    limits::MAX_BACKOFF_MS
                ),
            );
        }
    }
    if r.base_ms > r.max_ms {
        return invalid("retry.base_ms", "must not exceed retry.max_ms".into());
    }
    let timeouts = [
        ("timeout_seconds", Some(step.timeout_seconds)),
        ("queue_timeout_seconds", step.queue_timeout_seconds),
    ];
    for (field, seconds) in timeouts {
        if let Some(s) = seconds
            && !(1..=limits::MAX_TIMEOUT_SECONDS).contains(&s)
        {
            return invalid(
                field,
                format!(
                    "must be 1 to {} seconds (30 days; got {s})",
                    limits::MAX_TIMEOUT_SECONDS
                ),
            );
        }
    }
    check_text(&format!("steps.{}.handler", step.name), &step.handler)?;
    for branch in &step.branches {
        check_text(&format!("steps.{}.branches", step.name), branch)?;
    }
    Ok(())
}

/// A limit's problem as a template error naming its field.
pub(super) fn flow_problem(p: crate::flow::Problem) -> ErrorKind {
    ErrorKind::InvalidField {
        field: p.field,
        problem: p.problem,
    }
}
