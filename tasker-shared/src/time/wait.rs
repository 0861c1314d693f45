//! A wait step's specification: a sleep, a time, a signal with its timeout, or an event of the
//! task's namespace whose data matches the task's context (docs/events.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{FieldError, parse_duration};
use crate::json_check::pointer_path;

/// A signal wait's timeout when the template gives none.
pub const DEFAULT_SIGNAL_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// The handler name wait steps carry: the orchestrator resolves them itself, no worker ever
/// receives one. Template handlers may not start with `tasker:`.
pub const WAIT_HANDLER: &str = "tasker:wait";

/// What a wait step waits for: its `wait:` in a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitSpec {
    /// A duration to sleep from when the step becomes ready (`"24h"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<String>,
    /// A JSON pointer into the task context to an RFC 3339 time to sleep until.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The name of the signal to wait for (`POST /v1/tasks/{id}/signals/{name}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The name of the event to wait for (`POST /v1/events` to the task's namespace): the step
    /// completes with the first such event, received after the task was created, that no other
    /// step took and whose values `match` reads are the context's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// An event wait's correlation: a JSON pointer into the event (`/data/order_id`, `/key`)
    /// → a JSON pointer into the task's context (`/context/order_id`) whose value it must
    /// equal. At most 8; none: any event of that name.
    #[serde(
        default,
        rename = "match",
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub correlate: std::collections::BTreeMap<String, String>,
    /// How long to wait for the signal or event (`"7d"` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// What a signal or event that does not come does: `fail` (default), `skip`, `continue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
}

/// What a signal wait that timed out does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// The step fails for good (`wait_timed_out`), and with it the task.
    #[default]
    Fail,
    /// The step is skipped, and what depends on it only is skipped too (as a decision's
    /// unchosen branch).
    Skip,
    /// The step completes with `{"timed_out": true}`.
    Continue,
}

impl OnTimeout {
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Fail => "fail",
            OnTimeout::Skip => "skip",
            OnTimeout::Continue => "continue",
        }
    }
}

/// Whether `name` can name a signal: 1 to 64 ASCII letters, digits, `_`, `-` and `.`.
pub fn is_signal_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl WaitSpec {
    /// Checks the spec (fields named under `prefix`) and returns it in the form the engine
    /// stores on the step: `{"kind": "sleep", "ms"}`, `{"kind": "until", "pointer", "path"}`,
    /// `{"kind": "signal", "signal", "timeout_ms", "on_timeout"}` or `{"kind": "event", "event",
    /// "signal": "event:<name>", "match": [[event path, context path], …], "timeout_ms",
    /// "on_timeout"}` (the event a wait takes is delivered to it as that signal).
    pub fn compile(&self, prefix: &str) -> Result<Value, FieldError> {
        let field = |f: &str| format!("{prefix}.{f}");
        let given = [
            self.sleep.is_some(),
            self.until.is_some(),
            self.signal.is_some(),
            self.event.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(FieldError::new(
                prefix,
                "must give exactly one of `sleep`, `until`, `signal` and `event`",
            ));
        }
        let waits_for_one = self.signal.is_some() || self.event.is_some();
        if !waits_for_one && (self.timeout.is_some() || self.on_timeout.is_some()) {
            return Err(FieldError::new(
                field("timeout"),
                "and `on_timeout` apply to a `signal` or `event` wait only",
            ));
        }
        if self.event.is_none() && !self.correlate.is_empty() {
            return Err(FieldError::new(
                field("match"),
                "applies to an `event` wait only",
            ));
        }
        if let Some(text) = &self.sleep {
            let d = parse_duration(&field("sleep"), text)?;
            return Ok(serde_json::json!({"kind": "sleep", "ms": d.as_millis() as u64}));
        }
        if let Some(pointer) = &self.until {
            let path = pointer_path(pointer).ok_or_else(|| {
                FieldError::new(
                    field("until"),
                    format!(
                        "must be a JSON pointer into the context such as \"/due_at\" (got {pointer:?})"
                    ),
                )
            })?;
            return Ok(serde_json::json!({"kind": "until", "pointer": pointer, "path": path}));
        }
        let timeout = match &self.timeout {
            Some(text) => parse_duration(&field("timeout"), text)?,
            None => DEFAULT_SIGNAL_TIMEOUT,
        };
        let on_timeout = self.on_timeout.unwrap_or_default().as_str();
        if let Some(event) = &self.event {
            return self.compile_event(event, &field, timeout, on_timeout);
        }
        let signal = self.signal.as_deref().unwrap_or_default();
        if !is_signal_name(signal) {
            return Err(FieldError::new(
                field("signal"),
                format!("must be 1 to 64 ASCII letters, digits, `_`, `-` or `.` (got {signal:?})"),
            ));
        }
        Ok(serde_json::json!({
            "kind": "signal",
            "signal": signal,
            "timeout_ms": timeout.as_millis() as u64,
            "on_timeout": on_timeout,
        }))
    }

    fn compile_event(
        &self,
        event: &str,
        field: &dyn Fn(&str) -> String,
        timeout: std::time::Duration,
        on_timeout: &str,
    ) -> Result<Value, FieldError> {
        if !is_signal_name(event) {
            return Err(FieldError::new(
                field("event"),
                format!("must be 1 to 64 ASCII letters, digits, `_`, `-` or `.` (got {event:?})"),
            ));
        }
        if self.correlate.len() > MAX_MATCH {
            return Err(FieldError::new(
                field("match"),
                format!("at most {MAX_MATCH} pointers"),
            ));
        }
        let mut pairs = Vec::with_capacity(self.correlate.len());
        for (from, to) in &self.correlate {
            let at = field(&format!("match.{from}"));
            let event_path = crate::json_check::event_pointer(from)
                .map_err(|p| FieldError::new(at.clone(), p))?;
            let context_path = pointer_path(to)
                .filter(|p| p.len() > 1 && p[0] == "context")
                .ok_or_else(|| {
                    FieldError::new(
                        at,
                        format!(
                            "must be a JSON pointer into the task's context such as \"/context/order_id\" (got {to:?})"
                        ),
                    )
                })?;
            pairs.push(serde_json::json!([event_path, context_path[1..]]));
        }
        Ok(serde_json::json!({
            "kind": "event",
            "event": event,
            "signal": format!("event:{event}"),
            "match": pairs,
            "timeout_ms": timeout.as_millis() as u64,
            "on_timeout": on_timeout,
        }))
    }
}

/// Most pointers an event wait's `match` may have.
pub const MAX_MATCH: usize = 8;
