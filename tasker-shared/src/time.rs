//! Time in workflows, with no I/O: durations as users write them (`"10m"`), cron expressions
//! evaluated in an IANA time zone with the daylight-saving rules cron users expect, the fires a
//! schedule owes at a given instant (its catch-up window), and the specifications of wait steps
//! and schedules. Everything here takes the current time as an argument, so tests can drive it
//! with any clock.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest sleep, wait timeout, delayed start or catch-up window: one year.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A signal wait's timeout when the template gives none.
pub const DEFAULT_SIGNAL_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A schedule's catch-up window when none is given.
pub const DEFAULT_CATCH_UP: Duration = Duration::from_secs(3600);

/// The handler name wait steps carry: the orchestrator resolves them itself, no worker ever
/// receives one. Template handlers may not start with `tasker:`.
pub const WAIT_HANDLER: &str = "tasker:wait";

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

/// A cron expression (5 fields, or 6 with seconds first) in an IANA time zone.
///
/// Daylight saving, as cron users expect (Vixie cron's rules): a job at a fixed time of day
/// (one second, minute and hour) whose time falls in the hour skipped when clocks go forward
/// fires once, right after the jump; one whose time falls in the hour repeated when clocks go
/// back fires once, the first time. A job on an interval or wildcard (`*/15 * * * *`,
/// `0 * * * *`) follows the clock that actually passes: nothing in the skipped hour, both passes
/// of the repeated one.
#[derive(Debug, Clone)]
pub struct Cron {
    cron: croner::Cron,
    tz: Tz,
    fixed: bool,
}

impl Cron {
    /// Parses `expr` for `timezone` (an IANA name such as `America/New_York`, or `UTC`).
    pub fn parse(expr: &str, timezone: &str) -> Result<Cron, FieldError> {
        let fields = expr.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            return Err(FieldError::new(
                "cron",
                format!(
                    "must have 5 fields (minute hour day month weekday) or 6 (seconds first); \
                     got {fields} in {expr:?}"
                ),
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| FieldError::new("cron", format!("is not valid: {e} (in {expr:?})")))?;
        let tz = Tz::from_str(timezone).map_err(|_| {
            FieldError::new(
                "timezone",
                format!(
                    "must be an IANA time zone such as \"UTC\" or \"America/New_York\" (got {timezone:?})"
                ),
            )
        })?;
        let fixed = cron.determine_job_type() == croner::JobType::FixedTime;
        Ok(Cron { cron, tz, fixed })
    }

    /// The first fire strictly after `after`; `None` if there is none (a date that never comes).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        use chrono::Timelike;
        let local = after.with_timezone(&self.tz).naive_local();
        let local = local.with_nanosecond(0).unwrap_or(local);
        // Instants ahead of `after` can have earlier wall-clock times only across a change that
        // turns clocks back: start that much earlier, and look that far past the first found.
        let back = self.turned_back_within_a_day(after);
        let mut cursor = local - back;
        let mut best: Option<(DateTime<Utc>, NaiveDateTime)> = None;
        for _ in 0..200_000 {
            let at = Utc.from_utc_datetime(&cursor);
            let candidate = self.cron.find_next_occurrence(&at, false).ok()?.naive_utc();
            if let Some((_, naive)) = best
                && candidate > naive + back
            {
                break;
            }
            for instant in self.instants(candidate) {
                if instant > after && best.is_none_or(|(b, _)| instant < b) {
                    best = Some((instant, candidate));
                }
            }
            if best.is_some() && back.is_zero() {
                break;
            }
            cursor = candidate;
        }
        best.map(|(instant, _)| instant)
    }

    /// The next `n` fires after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut at = after;
        while out.len() < n {
            let Some(next) = self.next_after(at) else {
                break;
            };
            out.push(next);
            at = next;
        }
        out
    }

    /// How far clocks turn back within a day of `at` (zero almost always).
    fn turned_back_within_a_day(&self, at: DateTime<Utc>) -> chrono::Duration {
        use chrono::Offset;
        let offset = |t: DateTime<Utc>| {
            i64::from(
                self.tz
                    .offset_from_utc_datetime(&t.naive_utc())
                    .fix()
                    .local_minus_utc(),
            )
        };
        let shift = offset(at) - offset(at + chrono::Duration::hours(26));
        chrono::Duration::seconds(shift.max(0))
    }

    /// The instants a wall-clock match stands for, by the rules above.
    fn instants(&self, naive: NaiveDateTime) -> Vec<DateTime<Utc>> {
        match self.tz.from_local_datetime(&naive) {
            LocalResult::Single(t) => vec![t.with_timezone(&Utc)],
            LocalResult::Ambiguous(first, second) if self.fixed => {
                let _ = second;
                vec![first.with_timezone(&Utc)]
            }
            LocalResult::Ambiguous(first, second) => {
                vec![first.with_timezone(&Utc), second.with_timezone(&Utc)]
            }
            LocalResult::None if self.fixed => vec![self.end_of_gap(naive)],
            LocalResult::None => Vec::new(),
        }
    }

    /// The first instant whose wall-clock time is past `naive`, a time the clocks skipped.
    fn end_of_gap(&self, naive: NaiveDateTime) -> DateTime<Utc> {
        let wall = |secs: i64| {
            DateTime::from_timestamp(secs, 0)
                .unwrap_or_default()
                .with_timezone(&self.tz)
                .naive_local()
        };
        // In whole seconds: cron times are whole seconds, and so is every clock change.
        let at = naive.and_utc().timestamp();
        let (mut lo, mut hi) = (at - 15 * 3600, at + 15 * 3600);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if wall(mid) > naive {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        DateTime::from_timestamp(hi, 0).unwrap_or_default()
    }
}

/// Most missed fires counted one by one before a catch-up jumps ahead (a schedule every second
/// that was down for days); the count reported is then a lower bound.
const MAX_COUNTED_SKIPS: u64 = 100_000;

/// What a schedule owes at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The nominal time to fire now, if one is due inside the catch-up window.
    pub fire: Option<DateTime<Utc>>,
    /// Fires missed longer ago than the catch-up window: skipped, counted.
    pub skipped: u64,
    /// The nominal time of the fire after this one.
    pub next: Option<DateTime<Utc>>,
}

impl Cron {
    /// At `now`, for a schedule whose next fire is `next_fire`: fires older than `catch_up` are
    /// skipped and counted; the oldest one inside the window is fired (one per call, so a
    /// catch-up runs one fire after another, never as a burst).
    pub fn due(&self, next_fire: DateTime<Utc>, now: DateTime<Utc>, catch_up: Duration) -> Due {
        if next_fire > now {
            return Due {
                fire: None,
                skipped: 0,
                next: Some(next_fire),
            };
        }
        let oldest = now - chrono::Duration::from_std(catch_up).unwrap_or(chrono::Duration::MAX);
        let mut nominal = Some(next_fire);
        let mut skipped = 0;
        while let Some(n) = nominal
            && n < oldest
        {
            skipped += 1;
            nominal = if skipped < MAX_COUNTED_SKIPS {
                self.next_after(n)
            } else {
                self.next_after(oldest - chrono::Duration::microseconds(1))
            };
        }
        match nominal {
            Some(n) if n <= now => Due {
                fire: Some(n),
                skipped,
                next: self.next_after(n),
            },
            next => Due {
                fire: None,
                skipped,
                next,
            },
        }
    }
}

/// What a schedule does when a fire comes while the task of its last fire is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
            if !crate::template::is_identifier(value) {
                return Err(FieldError::new(
                    field,
                    format!(
                        "must be 1 to 128 ASCII letters, digits, `_`, `-` or `.` (got {value:?})"
                    ),
                ));
            }
        }
        if let Some(v) = &self.version
            && !crate::template::is_identifier(v)
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

/// What a wait step waits for: its `wait:` in a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
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
    /// How long to wait for the signal (`"7d"` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// What a signal that does not come does: `fail` (default), `skip`, `continue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
}

/// What a signal wait that timed out does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
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
    /// stores on the step: `{"kind": "sleep", "ms"}`, `{"kind": "until", "pointer", "path"}` or
    /// `{"kind": "signal", "signal", "timeout_ms", "on_timeout"}`.
    pub fn compile(&self, prefix: &str) -> Result<Value, FieldError> {
        let field = |f: &str| format!("{prefix}.{f}");
        let given = [
            self.sleep.is_some(),
            self.until.is_some(),
            self.signal.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(FieldError::new(
                prefix,
                "must give exactly one of `sleep`, `until` and `signal`",
            ));
        }
        if self.signal.is_none() && (self.timeout.is_some() || self.on_timeout.is_some()) {
            return Err(FieldError::new(
                field("timeout"),
                "and `on_timeout` apply to a `signal` wait only",
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
        let signal = self.signal.as_deref().unwrap_or_default();
        if !is_signal_name(signal) {
            return Err(FieldError::new(
                field("signal"),
                format!("must be 1 to 64 ASCII letters, digits, `_`, `-` or `.` (got {signal:?})"),
            ));
        }
        let timeout = match &self.timeout {
            Some(text) => parse_duration(&field("timeout"), text)?,
            None => DEFAULT_SIGNAL_TIMEOUT,
        };
        Ok(serde_json::json!({
            "kind": "signal",
            "signal": signal,
            "timeout_ms": timeout.as_millis() as u64,
            "on_timeout": self.on_timeout.unwrap_or_default().as_str(),
        }))
    }
}

/// The path segments of a JSON pointer (`/a/b~1c` is `["a", "b/c"]`), or `None` if it is not
/// one (it must start with `/` and name something).
pub fn pointer_path(pointer: &str) -> Option<Vec<String>> {
    let rest = pointer.strip_prefix('/')?;
    if pointer.len() > 256 || pointer.chars().any(char::is_control) {
        return None;
    }
    Some(
        rest.split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Schedule files: every `*.yaml` / `*.yml` in a `schedules/` folder below `dir` (a templates
/// folder; template loading leaves `schedules/` folders out), each one [`ScheduleSpec`],
/// checked, sorted by path. A problem names the file and, where it can be found, the line.
pub fn load_schedules(
    dir: &std::path::Path,
) -> Result<Vec<(std::path::PathBuf, ScheduleSpec)>, crate::template::Error> {
    use crate::template::{child, loading};
    if dir.is_file() {
        // A single template file has no `schedules/` folder below it.
        return Ok(Vec::new());
    }
    let files = loading::yaml_files(dir, crate::template::schedule_files)?;
    let texts = loading::read_all(&files)?;
    files
        .into_iter()
        .zip(child::parse_schedules(texts, child::PARSE_BUDGET))
        .map(|(file, spec)| spec.map(|s| (file, s)))
        .collect()
}

/// What is checked of a schedule's text before any parser reads it: its size and the
/// pre-scan's bounds (`crate::template::bounds`).
pub fn precheck_schedule(src: &str, file: &str) -> Result<(), crate::template::Error> {
    use crate::template::{Error, ErrorKind};
    if src.len() > 64 * 1024 {
        return Err(Error::of_file(
            file,
            ErrorKind::InvalidField {
                field: "(file)".into(),
                problem: "a schedule file may be at most 65536 bytes".into(),
            },
        ));
    }
    crate::template::bounds::check(src).map_err(|(line, kind)| Error {
        line: Some(line),
        ..Error::of_file(file, kind)
    })
}

/// One schedule's YAML (or JSON) text from `file` (a label for errors), checked; a problem with
/// its line and column where known (the YAML parser's positions).
pub fn parse_schedule(src: &str, file: &str) -> Result<ScheduleSpec, crate::template::Error> {
    use crate::template::{Error, ErrorKind, Position};
    precheck_schedule(src, file)?;
    let spec: ScheduleSpec = serde_norway::from_str(src).map_err(|e| {
        let at = e.location().map(|l| Position {
            line: l.line(),
            column: l.column(),
        });
        Error::at(file, at, ErrorKind::Syntax(e.to_string()))
    })?;
    spec.check().map_err(|e| {
        let at = crate::template::Positions::scan(src).key(&e.field);
        Error::at(
            file,
            at,
            ErrorKind::InvalidField {
                field: e.field,
                problem: e.problem,
            },
        )
    })?;
    Ok(spec)
}

#[cfg(test)]
mod tests;
