//! Per-step retry policy: how many attempts a step gets and how long to wait between them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the delay between attempts grows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Backoff {
    /// Retry at once.
    None,
    /// `base_ms * failed_attempts`.
    Linear,
    /// `base_ms * 2^(failed_attempts - 1)`.
    #[default]
    Exponential,
}

impl Backoff {
    /// The name used in templates and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Backoff::None => "none",
            Backoff::Linear => "linear",
            Backoff::Exponential => "exponential",
        }
    }

    pub const ALL: [Backoff; 3] = [Backoff::None, Backoff::Linear, Backoff::Exponential];
}

/// Retry policy of one step, as written in a template's `retry:` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. `1` means no retry.
    pub max_attempts: u32,
    pub backoff: Backoff,
    /// Delay unit in milliseconds.
    pub base_ms: u64,
    /// Upper bound of any single delay in milliseconds.
    pub max_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff: Backoff::Exponential,
            base_ms: 100,
            max_ms: 10_000,
        }
    }
}

impl RetryPolicy {
    /// Delay to wait after `failed_attempt` (1-based) failed, before the next attempt starts.
    pub fn delay_after(&self, failed_attempt: u32) -> Duration {
        let n = u64::from(failed_attempt.max(1));
        let ms = match self.backoff {
            Backoff::None => 0,
            Backoff::Linear => self.base_ms.saturating_mul(n),
            Backoff::Exponential => {
                let factor = 1u64.checked_shl((n - 1) as u32).unwrap_or(u64::MAX);
                self.base_ms.saturating_mul(factor)
            }
        };
        Duration::from_millis(ms.min(self.max_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff: Backoff) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            backoff,
            base_ms: 100,
            max_ms: 1_000,
        }
    }

    #[test]
    fn none_never_waits() {
        assert_eq!(policy(Backoff::None).delay_after(3), Duration::ZERO);
    }

    #[test]
    fn linear_grows_by_base_and_is_capped() {
        let p = policy(Backoff::Linear);
        assert_eq!(p.delay_after(1), Duration::from_millis(100));
        assert_eq!(p.delay_after(3), Duration::from_millis(300));
        assert_eq!(p.delay_after(50), Duration::from_millis(1_000));
    }

    #[test]
    fn exponential_doubles_and_is_capped_without_overflow() {
        let p = policy(Backoff::Exponential);
        assert_eq!(p.delay_after(1), Duration::from_millis(100));
        assert_eq!(p.delay_after(2), Duration::from_millis(200));
        assert_eq!(p.delay_after(4), Duration::from_millis(800));
        assert_eq!(p.delay_after(5), Duration::from_millis(1_000));
        assert_eq!(p.delay_after(200), Duration::from_millis(1_000));
    }

    #[test]
    fn backoff_names_are_distinct() {
        let names: std::collections::BTreeSet<_> =
            Backoff::ALL.iter().map(|b| b.as_str()).collect();
        assert_eq!(names.len(), Backoff::ALL.len());
    }
}
