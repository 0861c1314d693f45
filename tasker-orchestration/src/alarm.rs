//! The alarm of the orchestrator's timer: whoever commits a timer that comes due (a wait step's
//! wake, a task's start, a signal's arrival) arms it for then; the timer's loop
//! (`crate::timers`) looks at what is due in the database when it rings. The alarm itself
//! holds nothing durable: if this process stops, the sweeper's tick of another orchestrator
//! rings its own.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A handle to ring the timer now or later; cheap to clone.
#[derive(Debug, Clone)]
pub struct Alarm {
    bell: Arc<Notify>,
    stop: CancellationToken,
}

impl Alarm {
    pub fn new(stop: CancellationToken) -> Self {
        Self {
            bell: Arc::new(Notify::new()),
            stop,
        }
    }

    /// Rings now. Rings that come while the timer is busy make one more pass, not one each.
    pub fn ring(&self) {
        self.bell.notify_one();
    }

    /// Rings after `delay` (unless the orchestrator stops first).
    pub fn arm(&self, delay: Duration) {
        if delay.is_zero() {
            return self.ring();
        }
        let alarm = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = alarm.stop.cancelled() => {}
                () = tokio::time::sleep(delay) => alarm.ring(),
            }
        });
    }

    /// Waits for the next ring.
    pub async fn rung(&self) {
        self.bell.notified().await;
    }
}
