//! Durations as users write them (`"30s"`, `"10m"`, `"1h30m"`), and a field that is wrong.

use std::time::Duration;

/// The longest sleep, wait timeout, delayed start or catch-up window: one year.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A field that is wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct FieldError {
    pub field: String,
    pub problem: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// A duration as users write it (`"30s"`, `"10m"`, `"1h30m"`, `"7d"`), at most a year.
pub fn parse_duration(field: &str, text: &str) -> Result<Duration, FieldError> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        FieldError::new(
            field,
            format!("must be a duration such as \"30s\", \"10m\" or \"24h\" (got {text:?}: {e})"),
        )
    })?;
    if d > MAX_DURATION {
        return Err(FieldError::new(
            field,
            format!("must be at most 365 days (got {text:?})"),
        ));
    }
    Ok(d)
}

/// A duration in the form [`parse_duration`] reads (`"1h"`, `"1h 30m"`).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}
