//! Fair sharing: a task's priority, concurrency limits per key and rate limits, as a template
//! says them, how they are checked, and how a new task's steps get their limits resolved
//! against its context. The engine (slots claimed under a row lock, rate tokens, throttled
//! steps) lives in the orchestrator's SQL (`tasker_dispatch`, `tasker_claim`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest key value a limit may have, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The most slots one concurrency key may have.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The longest period of a rate limit.
pub const MAX_RATE_PERIOD: Duration = Duration::from_secs(24 * 3600);

/// How soon a task's steps run when workers have more work than they can start at once.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    #[default]
    Normal,
    Low,
}

impl Priority {
    pub const ALL: [Priority; 3] = [Priority::High, Priority::Normal, Priority::Low];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// The engine's rank: 0 high, 1 normal, 2 low (smaller goes first).
    pub fn rank(self) -> i16 {
        match self {
            Priority::High => 0,
            Priority::Normal => 1,
            Priority::Low => 2,
        }
    }

    pub fn from_rank(rank: i16) -> Priority {
        match rank {
            0 => Priority::High,
            2 => Priority::Low,
            _ => Priority::Normal,
        }
    }

    pub fn parse(s: &str) -> Option<Priority> {
        Priority::ALL.into_iter().find(|p| p.as_str() == s)
    }

    pub fn is_normal(&self) -> bool {
        *self == Priority::Normal
    }
}

/// `concurrency:` — at most `limit` steps with the same key value in flight at once, across
/// the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySpec {
    /// A JSON pointer into the task's context; its value is the key.
    pub key: String,
    pub limit: u32,
}

/// `rate_limit:` — at most `limit` step starts per `per` for one key, `burst` of them at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    /// A name shared cluster-wide, or a JSON pointer into the context whose value names it.
    pub key: String,
    pub limit: u32,
    /// The period, as a duration (`"1s"`, `"1m"`).
    pub per: String,
    /// How many may start at once (default: `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// A problem with a limit, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub problem: String,
}

fn problem(field: String, problem: impl Into<String>) -> Problem {
    Problem {
        field,
        problem: problem.into(),
    }
}

fn check_pointer(field: &str, pointer: &str) -> Result<(), Problem> {
    if crate::json_check::pointer_path(pointer).is_none_or(|p| p.is_empty()) {
        return Err(problem(
            field.to_owned(),
            format!(
                "{pointer:?} is not a JSON pointer into the context (such as \"/customer_id\")"
            ),
        ));
    }
    Ok(())
}

fn check_limit(field: String, limit: u32, most: u32) -> Result<(), Problem> {
    if limit == 0 || limit > most {
        return Err(problem(
            field,
            format!("must be between 1 and {most} (got {limit})"),
        ));
    }
    Ok(())
}

/// Whether `name` can be a rate limit's literal key.
fn is_key_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_KEY_BYTES
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

impl ConcurrencySpec {
    /// Checks it; `at` names it (`concurrency`, `steps.<name>.concurrency`).
    pub fn check(&self, at: &str) -> Result<(), Problem> {
        check_pointer(&format!("{at}.key"), &self.key)?;
        check_limit(format!("{at}.limit"), self.limit, MAX_CONCURRENCY)
    }
}

impl RateLimitSpec {
    /// Its numbers as the engine keeps them: the limit, the period in milliseconds (at least
    /// 1), the burst (the limit unless given).
    pub fn numbers(&self) -> (u32, u64, u32) {
        let per = self
            .period("rate_limit")
            .map_or(1000, |d| d.as_millis() as u64);
        (self.limit, per.max(1), self.burst.unwrap_or(self.limit))
    }

    /// Checks it; `at` names it (`rate_limit`, `steps.<name>.rate_limit`).
    pub fn check(&self, at: &str) -> Result<(), Problem> {
        if self.key.starts_with('/') {
            check_pointer(&format!("{at}.key"), &self.key)?;
        } else if !is_key_name(&self.key) {
            return Err(problem(
                format!("{at}.key"),
                format!(
                    "{:?} is neither a JSON pointer into the context nor a name of 1 to 128 ASCII \
                     letters, digits, `_`, `-`, `.` and `:`",
                    self.key
                ),
            ));
        }
        check_limit(format!("{at}.limit"), self.limit, u32::MAX)?;
        if let Some(b) = self.burst {
            check_limit(format!("{at}.burst"), b, u32::MAX)?;
        }
        self.period(at).map(|_| ())
    }

    /// The period, checked: more than zero, at most a day.
    pub fn period(&self, at: &str) -> Result<Duration, Problem> {
        let field = format!("{at}.per");
        let d = crate::time::parse_duration(&field, &self.per)
            .map_err(|e| problem(e.field, e.problem))?;
        if d.is_zero() || d > MAX_RATE_PERIOD {
            return Err(problem(
                field,
                format!("must be more than 0s and at most 24h (got {:?})", self.per),
            ));
        }
        Ok(d)
    }
}

/// Why a new task's limits could not be resolved against its context: the API's 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KeyError {
    /// `concurrency_key_missing`, `concurrency_key_too_long`, `rate_limit_key_missing` or
    /// `rate_limit_key_too_long`.
    pub code: &'static str,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_order_and_parse() {
        assert!(Priority::High < Priority::Normal && Priority::Normal < Priority::Low);
        for p in Priority::ALL {
            assert_eq!(Priority::parse(p.as_str()), Some(p));
            assert_eq!(Priority::from_rank(p.rank()), p);
        }
        assert_eq!(Priority::parse("urgent"), None);
    }
}
