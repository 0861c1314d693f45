//! The engine's clock (`/v1/clock`): what time workflows run by, and in test mode how a test
//! moves it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The engine's clock: the time waits, retries, deadlines, schedules and rate limits read.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// The engine's time now.
    pub now: DateTime<Utc>,
    /// How far it is ahead of the wall clock, in milliseconds (0 unless a test moved it).
    pub skew_ms: i64,
    /// Whether this orchestrator runs in test mode (`orchestrator.test_clock`), where
    /// `POST /v1/clock/advance` and `/v1/clock/skip` move the clock.
    pub test_clock: bool,
    /// The earliest time a timer comes due (a wait's wake, a retry, a throttled step's next
    /// try, a later start, a deadline, a schedule's next fire); `None`: no timer is set.
    #[serde(default)]
    pub next_timer: Option<DateTime<Utc>>,
    /// Whether some step is with a worker (sent and not answered): a skip moves nothing then.
    #[serde(default)]
    pub busy: bool,
}

/// `POST /v1/clock/advance`: move the engine's clock forward (test mode).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvanceClock {
    /// How far: a duration such as `90s`, `3d` or `1h30m` (at most a year).
    pub by: String,
}

/// What `POST /v1/clock/skip` did.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Whether the clock moved: to `clock.next_timer`, when no step was with a worker and that
    /// timer was still ahead.
    pub skipped: bool,
    /// The clock after the skip.
    pub clock: Clock,
}
