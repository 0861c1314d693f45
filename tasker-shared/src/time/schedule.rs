//! A schedule's specification: its template, cron, time zone, context, overlap and catch-up.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Cron, FieldError, parse_duration};

/// A schedule's catch-up window when none is given.
pub const DEFAULT_CATCH_UP: Duration = Duration::from_secs(3600);

/// What a schedule does when a fire comes while the task of its last fire is still open.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// The fire is skipped (counted as `overlap`).
    #[default]
    Skip,
    /// The fire starts another task.
    Allow,
    /// The fire waits for the open task to end; one waits at most, later ones are skipped.
    BufferOne,
    /// The open task is cancelled and the fire starts a new one.
    CancelPrevious,
}

impl Overlap {
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Allow => "allow",
            Overlap::BufferOne => "buffer_one",
            Overlap::CancelPrevious => "cancel_previous",
        }
    }

    pub fn parse(s: &str) -> Option<Overlap> {
        [
            Overlap::Skip,
            Overlap::Allow,
            Overlap::BufferOne,
            Overlap::CancelPrevious,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// A schedule as declared: in `schedules/*.yaml` next to templates, or the body of
/// `POST /v1/schedules`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    pub namespace: String,
    /// The schedule's name, unique in its namespace.
    pub name: String,
    /// The template's name (in the same namespace).
    pub template: String,
    /// The template version; the newest registered one at each fire by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// 5 fields (minute hour day month weekday), or 6 with seconds first.
    pub cron: String,
    /// An IANA time zone; `UTC` by default.
    #[serde(default = "utc")]
    pub timezone: String,
    /// The context of every task it starts (`{}` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    #[serde(default)]
    pub overlap: Overlap,
    /// Fires missed longer ago than this (every orchestrator down) are skipped and counted;
    /// `"1h"` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
}

fn utc() -> String {
    "UTC".to_owned()
}

impl ScheduleSpec {
    /// Checks every field; returns the compiled cron and the catch-up window.
    pub fn check(&self) -> Result<(Cron, Duration), FieldError> {
        for (field, value) in [
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("template", &self.template),
        ] {
            if !crate::names::is_identifier(value) {
                return Err(FieldError::new(
                    field,
                    format!(
                        "must be 1 to 128 ASCII letters, digits, `_`, `-` or `.` (got {value:?})"
                    ),
                ));
            }
        }
        if let Some(v) = &self.version
            && !crate::names::is_identifier(v)
        {
            return Err(FieldError::new(
                "version",
                format!("is not valid (got {v:?})"),
            ));
        }
        if let Some(c) = &self.context
            && !c.is_object()
        {
            return Err(FieldError::new("context", "must be a JSON object"));
        }
        let cron = Cron::parse(&self.cron, &self.timezone)?;
        let catch_up = match &self.catch_up {
            Some(text) => parse_duration("catch_up", text)?,
            None => DEFAULT_CATCH_UP,
        };
        Ok((cron, catch_up))
    }
}
