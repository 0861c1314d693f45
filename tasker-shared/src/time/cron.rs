//! Cron expressions in an IANA time zone, and the fires a schedule owes at an instant.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};

use super::FieldError;

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
