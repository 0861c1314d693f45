//! Copies of a step attempt handed over again — the broker redelivers a message whose consumer
//! went away, an orchestrator re-sends what a dead one dispatched — run only while the attempt
//! is open. A copy of an attempt running here is not run beside it (the consumption's
//! `attempts`); one of an attempt that ended here lately is not run again ([`Recent`]); any
//! other copy is checked with the orchestrator before its handler starts ([`over`]). A copy
//! run after its attempt ended would hold no concurrency slot (the attempt gave it back when it
//! ended), so the step's limit would not hold, and its handler's effects would happen twice.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use uuid::Uuid;

use tasker_client::Client;
use tasker_shared::api::{RunningReport, RunningStep};

/// Attempts that ended here, remembered for this many.
const RECENT_MAX: usize = 10_000;

/// How long a copy waits for the orchestrator's answer before it runs anyway.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The attempts that ended in this worker lately (the last [`RECENT_MAX`]).
#[derive(Default)]
pub(super) struct Recent {
    order: VecDeque<(Uuid, u32)>,
    set: HashSet<(Uuid, u32)>,
}

impl Recent {
    pub fn insert(&mut self, attempt: (Uuid, u32)) {
        if self.set.insert(attempt) {
            self.order.push_back(attempt);
            if self.order.len() > RECENT_MAX
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }

    pub fn contains(&self, attempt: &(Uuid, u32)) -> bool {
        self.set.contains(attempt)
    }
}

/// Whether the attempt of a copy handed over again is over, asked of the orchestrator with a
/// running report (`POST /v1/workers/{id}/running`: an open attempt is marked running on this
/// worker, as it is about to be). An orchestrator that cannot answer in time, or an older one
/// that does not say, leaves it open: the copy runs (at least once, never lost).
pub(super) async fn over(client: &Client, worker: Uuid, step: Uuid, attempt: u32) -> bool {
    let report = RunningReport {
        steps: vec![RunningStep {
            step_id: step,
            attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
            started_at: chrono::Utc::now(),
        }],
    };
    match tokio::time::timeout(CHECK_TIMEOUT, client.report_running(worker, &report)).await {
        Ok(Ok(recorded)) => recorded.over.contains(&step),
        Ok(Err(e)) => {
            tracing::warn!(%step, attempt, error = %e,
                "cannot ask whether a step handed over again is still open; running it");
            false
        }
        Err(_) => {
            tracing::warn!(%step, attempt,
                "no answer in time whether a step handed over again is still open; running it");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_attempts_are_forgotten_first() {
        let mut recent = Recent::default();
        let first = (Uuid::now_v7(), 1);
        recent.insert(first);
        recent.insert(first);
        assert_eq!(recent.order.len(), 1, "an attempt is remembered once");
        for _ in 0..RECENT_MAX - 1 {
            recent.insert((Uuid::now_v7(), 1));
        }
        assert!(recent.contains(&first));
        recent.insert((Uuid::now_v7(), 2));
        assert!(!recent.contains(&first));
        assert_eq!(recent.set.len(), RECENT_MAX);
    }
}
