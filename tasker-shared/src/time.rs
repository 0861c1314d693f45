//! Time in workflows, with no I/O: durations as users write them (`"10m"`), cron expressions
//! evaluated in an IANA time zone with the daylight-saving rules cron users expect, the fires a
//! schedule owes at a given instant (its catch-up window), and the specifications of wait steps
//! and schedules. Everything here takes the current time as an argument, so tests can drive it
//! with any clock. (Reading schedule files is the templates' business:
//! `crate::template::load_schedules`.)

mod cron;
mod duration;
mod schedule;
mod wait;

pub use cron::{Cron, Due};
pub use duration::{FieldError, MAX_DURATION, format_duration, parse_duration};
pub use schedule::{DEFAULT_CATCH_UP, Overlap, ScheduleSpec};
pub use wait::{DEFAULT_SIGNAL_TIMEOUT, OnTimeout, WAIT_HANDLER, WaitSpec, is_signal_name};

#[cfg(test)]
mod tests;
