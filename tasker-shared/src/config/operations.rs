//! How operations by filter run (`[operations]`): `POST /v1/operations` retries, resolves or
//! cancels every task a filter matches, in batches, at a bounded pace.

use serde::{Deserialize, Serialize};

use super::Error;

/// The pace and bounds of operations by filter (`[operations]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OperationsConfig {
    /// Tasks acted on per transaction.
    pub batch: usize,
    /// The most of its time an operation spends acting (1 to 100): after a batch that took `t`
    /// it pauses `t × (100 − busy_percent) / busy_percent`, so a large operation runs beside
    /// the load rather than ahead of it.
    pub busy_percent: u8,
    /// The most tasks one operation may match (a larger filter is refused with
    /// `too_many_tasks`: narrow it, or run several).
    pub max_tasks: u64,
}

impl OperationsConfig {
    /// The batch and the pace are within their bounds.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |key, problem: &str| {
            Err(Error::Invalid {
                key,
                problem: problem.to_owned(),
            })
        };
        if self.batch == 0 || self.batch > 10_000 {
            return invalid("operations.batch", "must be 1 to 10000");
        }
        if !(1..=100).contains(&self.busy_percent) {
            return invalid("operations.busy_percent", "must be 1 to 100");
        }
        if self.max_tasks == 0 || self.max_tasks > 10_000_000 {
            return invalid("operations.max_tasks", "must be 1 to 10000000");
        }
        Ok(())
    }
}

impl Default for OperationsConfig {
    fn default() -> Self {
        Self {
            batch: 500,
            busy_percent: 50,
            max_tasks: 1_000_000,
        }
    }
}
