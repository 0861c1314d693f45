//! Start controls: how many tasks a burst of requests for one key starts, on `POST /v1/tasks`
//! and on a template's triggers (`on:`).
//!
//! - `dedupe: {key, ttl}`: the key is the task's idempotency key for `ttl`, even after the task
//!   is purged; after it, the same key starts a new task.
//! - `debounce: {key, period, max?, mode}`: `trailing` (the default) starts one task `period`
//!   after the last request of a burst, with that request's context, never later than `max`
//!   after the first; `leading` starts a task at the first request and answers it to the rest
//!   until the key has been quiet for `period` (or `max` has passed since the first).
//!
//! In `POST /v1/tasks` a control's `key` is the key itself; in a trigger it is a JSON pointer
//! into the event (`/key`, the event's key, by default).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::{FieldError, parse_duration};

/// Longest key of a control, in bytes (an idempotency key's).
pub const MAX_KEY_BYTES: usize = 255;

/// `dedupe:`: one task per key within `ttl`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DedupeSpec {
    /// `POST /v1/tasks`: the key (1 to 255 bytes), in place of `idempotency_key`. A trigger: a
    /// JSON pointer into the event (`/key`, the event's key, by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// How long the key keeps answering its task (`"24h"`; 1s to 365d), purged or not.
    pub ttl: String,
}

/// `debounce:`: one task per burst of requests for a key.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DebounceSpec {
    /// `POST /v1/tasks`: the key (1 to 255 bytes). A trigger: a JSON pointer into the event
    /// (`/key`, the event's key, by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// How long the key must be quiet for the burst to end (`"5s"`; 1s to 365d).
    pub period: String,
    /// The longest a burst lasts, from its first request (`"1m"`; at least `period`): a
    /// never-ending burst starts one task per `max`. No limit by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    #[serde(default)]
    pub mode: DebounceMode,
}

/// Which request of a burst starts its task.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DebounceMode {
    /// The first, at once; the rest are answered its task.
    Leading,
    /// The last, `period` after it (never later than `max` after the first).
    #[default]
    Trailing,
}

/// A dedupe window, checked: its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dedupe {
    pub ttl: Duration,
}

/// A debounce, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Debounce {
    pub period: Duration,
    pub max: Option<Duration>,
    pub mode: DebounceMode,
}

impl DedupeSpec {
    /// Its TTL, checked; `at` names the field (`dedupe`, `on[0].dedupe`).
    pub fn check(&self, at: &str) -> Result<Dedupe, FieldError> {
        Ok(Dedupe {
            ttl: window(&format!("{at}.ttl"), &self.ttl)?,
        })
    }
}

impl DebounceSpec {
    /// Its durations, checked; `at` names the field (`debounce`, `on[0].debounce`).
    pub fn check(&self, at: &str) -> Result<Debounce, FieldError> {
        let period = window(&format!("{at}.period"), &self.period)?;
        let max = self
            .max
            .as_deref()
            .map(|m| window(&format!("{at}.max"), m))
            .transpose()?;
        if let Some(max) = max
            && max < period
        {
            return Err(FieldError::new(
                format!("{at}.max"),
                format!(
                    "must be at least `period` ({:?} is shorter than {:?})",
                    self.max.as_deref().unwrap_or_default(),
                    self.period
                ),
            ));
        }
        Ok(Debounce {
            period,
            max,
            mode: self.mode,
        })
    }
}

/// A window's duration: at least a second (finer is below the timers' resolution).
fn window(field: &str, text: &str) -> Result<Duration, FieldError> {
    let d = parse_duration(field, text)?;
    if d < Duration::from_secs(1) {
        return Err(FieldError::new(
            field,
            format!("must be at least 1s (got {text:?})"),
        ));
    }
    Ok(d)
}

/// A control's key as a request gives it: 1 to [`MAX_KEY_BYTES`] bytes.
pub fn check_key(field: &str, key: Option<&str>) -> Result<String, FieldError> {
    match key {
        None => Err(FieldError::new(field, "is required")),
        Some("") => Err(FieldError::new(field, "must not be empty")),
        Some(k) if k.len() > MAX_KEY_BYTES => Err(FieldError::new(
            field,
            format!("must be at most {MAX_KEY_BYTES} bytes (got {})", k.len()),
        )),
        Some(k) => Ok(k.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debounce(period: &str, max: Option<&str>) -> Result<Debounce, FieldError> {
        DebounceSpec {
            key: None,
            period: period.into(),
            max: max.map(Into::into),
            mode: DebounceMode::default(),
        }
        .check("debounce")
    }

    #[test]
    fn windows_are_durations_of_a_second_or_more_and_max_covers_period() {
        let d = debounce("5s", Some("1m")).expect("valid");
        assert_eq!(d.period, Duration::from_secs(5));
        assert_eq!(d.max, Some(Duration::from_secs(60)));
        assert_eq!(d.mode, DebounceMode::Trailing);
        assert_eq!(
            debounce("500ms", None).unwrap_err().field,
            "debounce.period"
        );
        assert_eq!(
            debounce("10s", Some("5s")).unwrap_err().field,
            "debounce.max"
        );
        assert_eq!(debounce("soon", None).unwrap_err().field, "debounce.period");
        let ttl = DedupeSpec {
            key: None,
            ttl: "400d".into(),
        };
        assert_eq!(
            ttl.check("on[1].dedupe").unwrap_err().field,
            "on[1].dedupe.ttl"
        );
    }

    #[test]
    fn keys_are_one_to_255_bytes() {
        assert_eq!(check_key("dedupe.key", Some("a")), Ok("a".into()));
        assert!(check_key("dedupe.key", None).is_err());
        assert!(check_key("dedupe.key", Some("")).is_err());
        assert!(check_key("dedupe.key", Some(&"x".repeat(256))).is_err());
        assert!(check_key("dedupe.key", Some(&"x".repeat(255))).is_ok());
    }
}
