//! Deadlines: how long a task may run, from its start, and what happens when it runs longer —
//! `deadline: {within: 15m, action: fail | cancel | alert}` on a template, or on one request
//! (`POST /v1/tasks`, each item of its batch), which replaces the template's. The orchestrators'
//! timers act on it from PostgreSQL, so a restart loses none.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::{FieldError, parse_duration};

/// `deadline:` as written.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineSpec {
    /// How long the task may run, from its start (its creation, or its `run_at`): `"15m"`, 1s
    /// to 365d.
    pub within: String,
    #[serde(default)]
    pub action: DeadlineAction,
}

/// What a task past its deadline gets.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineAction {
    /// It ends in `error` (`error.kind`: `deadline_passed`); its steps not yet started are
    /// cancelled, and its children by their `on_parent_cancel`.
    #[default]
    Fail,
    /// It is cancelled, as `POST /v1/tasks/{id}/cancel` would.
    Cancel,
    /// It runs on; the deadline's passing is recorded on it (`deadline_passed_at`) and counted.
    Alert,
}

impl DeadlineAction {
    pub fn as_str(self) -> &'static str {
        match self {
            DeadlineAction::Fail => "fail",
            DeadlineAction::Cancel => "cancel",
            DeadlineAction::Alert => "alert",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Fail, Self::Cancel, Self::Alert]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// A deadline, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    pub within: Duration,
    pub action: DeadlineAction,
}

impl Deadline {
    /// `within` in milliseconds, as the engine keeps it.
    pub fn within_ms(&self) -> i64 {
        i64::try_from(self.within.as_millis()).unwrap_or(i64::MAX)
    }
}

impl DeadlineSpec {
    /// Checks it; the error names the field (`deadline.within`).
    pub fn check(&self) -> Result<Deadline, FieldError> {
        let within = parse_duration("deadline.within", &self.within)?;
        if within < Duration::from_secs(1) {
            return Err(FieldError::new(
                "deadline.within",
                format!("must be at least 1s (got {:?})", self.within),
            ));
        }
        Ok(Deadline {
            within,
            action: self.action,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_one_second_to_a_year_and_fails_by_default() {
        let spec: DeadlineSpec = serde_json::from_str(r#"{"within": "15m"}"#).unwrap();
        assert_eq!(
            spec.check().unwrap(),
            Deadline {
                within: Duration::from_secs(900),
                action: DeadlineAction::Fail
            }
        );
        for bad in ["500ms", "2y", "soon"] {
            let spec = DeadlineSpec {
                within: bad.into(),
                action: DeadlineAction::Cancel,
            };
            let e = spec.check().unwrap_err();
            assert_eq!(e.field, "deadline.within", "{bad}");
        }
        assert!(
            serde_json::from_str::<DeadlineSpec>(r#"{"within": "1m", "action": "page"}"#).is_err()
        );
    }
}
