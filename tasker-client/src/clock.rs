//! The engine's clock through the API: reading it, and in test mode (`tasker-orchestrator
//! test-env`) moving it and waiting for a task with time skipping (docs/testing.md).

use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use tasker_shared::api::{AdvanceClock, Clock, Skipped, Task};

use crate::client::{Client, decode};
use crate::error::Error;

/// How long one look at the task lasts before the clock may skip: the time a step takes to
/// be sent once its timer rang is far shorter.
const LOOK: Duration = Duration::from_millis(20);

impl Client {
    /// The engine's clock: its time, skew, next timer and whether a step is with a worker.
    pub async fn clock(&self) -> Result<Clock, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/clock", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Test mode: moves the engine's clock forward by `by` (`"7d"`, `"90s"`); the timers now
    /// due ring at once. `409 test_clock_off` on an orchestrator that is not in test mode.
    pub async fn advance_clock(&self, by: &str) -> Result<Clock, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/clock/advance", self.base))
            .json(&AdvanceClock { by: by.to_owned() })
            .send()
            .await?;
        decode(resp).await
    }

    /// Test mode: when no step is with a worker, moves the engine's clock to its next timer.
    pub async fn skip_clock(&self) -> Result<Skipped, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/clock/skip", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Test mode: waits up to `timeout` (wall time) for a task to become terminal, skipping
    /// the engine's clock to the next timer whenever no step is with a worker: a week-long
    /// sleep passes at once. Returns the task as it is then.
    pub async fn wait_skipping(&self, id: Uuid, timeout: Duration) -> Result<Task, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let task = self.task(id, Some(left.min(LOOK))).await?;
            if task.is_terminal() || left.is_zero() {
                return Ok(task);
            }
            self.skip_clock().await?;
        }
    }
}
