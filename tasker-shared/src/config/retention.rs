//! How long finished tasks are kept (`[retention]`).

use serde::{Deserialize, Serialize};

use super::Error;

/// How long finished tasks are kept (`[retention]`): an orchestrator purges a task this long
/// after it completed, failed or was cancelled, with its steps and history. `"never"` keeps
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Tasks that completed.
    pub complete: String,
    /// Tasks that failed.
    pub error: String,
    /// Tasks that were cancelled.
    pub cancelled: String,
    /// How long a purged task's id is remembered, to answer `410 task_purged` rather than 404.
    pub tombstones: String,
    /// How long the audit log's rows are kept (a row per request that changed something).
    pub audit: String,
    /// How long events (`POST /v1/events`) are kept, with what each started (the tasks
    /// themselves follow their own retention).
    pub events: String,
    /// How often an orchestrator looks for tasks to purge (one purges at a time cluster-wide).
    pub interval_ms: u64,
    /// Tasks purged per transaction.
    pub batch: usize,
    /// The shortest pause between two full batches.
    pub pause_ms: u64,
    /// The most of its time a purge spends deleting (1 to 100, default 5): after a batch that took `t` it
    /// pauses `t × (100 − busy_percent) / busy_percent` (at least `pause_ms`), so a backlog is
    /// purged beside the load, not ahead of it, however slow the database is at the time.
    pub busy_percent: u8,
}

/// The shortest retention: a task is kept at least an hour after it finished.
pub const MIN_RETENTION: std::time::Duration = std::time::Duration::from_secs(3_600);

impl RetentionConfig {
    /// Every retention parses and the purge's pace is within its bounds.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |key, problem: &str| {
            Err(Error::Invalid {
                key,
                problem: problem.to_owned(),
            })
        };
        self.policy()?;
        self.tombstones()?;
        self.audit()?;
        self.events()?;
        if self.batch == 0 || self.batch > 10_000 {
            return invalid("retention.batch", "must be 1 to 10000");
        }
        if !(1..=100).contains(&self.busy_percent) {
            return invalid("retention.busy_percent", "must be 1 to 100");
        }
        if self.interval_ms < 1_000 {
            return invalid("retention.interval_ms", "must be at least 1000");
        }
        Ok(())
    }

    /// Each finished state's retention, `None` for `"never"`.
    pub fn policy(
        &self,
    ) -> Result<Vec<(crate::task_state::TaskState, Option<std::time::Duration>)>, Error> {
        use crate::task_state::TaskState;
        [
            ("retention.complete", TaskState::Complete, &self.complete),
            ("retention.error", TaskState::Error, &self.error),
            ("retention.cancelled", TaskState::Cancelled, &self.cancelled),
        ]
        .into_iter()
        .map(|(key, state, text)| Ok((state, retention(key, text)?)))
        .collect()
    }

    /// How long tombstones are kept, `None` for `"never"`.
    pub fn tombstones(&self) -> Result<Option<std::time::Duration>, Error> {
        retention("retention.tombstones", &self.tombstones)
    }

    /// How long audit rows are kept, `None` for `"never"`.
    pub fn audit(&self) -> Result<Option<std::time::Duration>, Error> {
        retention("retention.audit", &self.audit)
    }

    /// How long events are kept, `None` for `"never"`.
    pub fn events(&self) -> Result<Option<std::time::Duration>, Error> {
        retention("retention.events", &self.events)
    }
}

/// A retention as configured: `"never"`, or a duration of at least [`MIN_RETENTION`].
fn retention(key: &'static str, text: &str) -> Result<Option<std::time::Duration>, Error> {
    if text.trim() == "never" {
        return Ok(None);
    }
    let d = crate::time::parse_duration(key, text).map_err(|e| Error::Invalid {
        key,
        problem: format!("{} (or \"never\")", e.problem),
    })?;
    if d < MIN_RETENTION {
        return Err(Error::Invalid {
            key,
            problem: format!("must be at least 1h, or \"never\" (got {text:?})"),
        });
    }
    Ok(Some(d))
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            complete: "30d".into(),
            error: "90d".into(),
            cancelled: "30d".into(),
            tombstones: "90d".into(),
            audit: "90d".into(),
            events: "30d".into(),
            interval_ms: 60_000,
            batch: 200,
            pause_ms: 100,
            busy_percent: 5,
        }
    }
}
