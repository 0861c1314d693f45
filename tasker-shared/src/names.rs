//! What a name in Tasker may be: a namespace, a template's name or version, a step's name.

/// Why `value` cannot be a namespace, name or version (1 to 128 ASCII letters, digits, `_`,
/// `-` and `.`), or `None` if it can.
pub fn identifier_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("must not be empty");
    }
    if value.len() > 128 {
        return Some("must be at most 128 characters");
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Some("may contain only ASCII letters, digits, `_`, `-` and `.`");
    }
    None
}

/// Whether `value` can be a namespace, name or version. Anything else names no template, so
/// callers need not look it up.
pub fn is_identifier(value: &str) -> bool {
    identifier_problem(value).is_none()
}
