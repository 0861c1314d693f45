//! Keeps a session alive: run it, and when it fails, wait a jittered, exponentially growing delay
//! and run it again, until cancelled. One supervisor for every long-lived connection — the
//! orchestrator's result consumer, its completion listener (PostgreSQL `LISTEN`) and the worker's
//! broker session — so they all back off the same way when a server is down.

use std::fmt::Display;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How a [`Supervisor`] backs off.
#[derive(Debug, Clone)]
pub struct Options {
    /// Delay after the first failure.
    pub initial: Duration,
    /// Longest delay between two attempts.
    pub max: Duration,
    /// A session that lived this long counts as healthy: the next failure starts again from
    /// `initial`.
    pub healthy_after: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            healthy_after: Duration::from_secs(30),
        }
    }
}

/// Runs a session again and again until it ends cleanly or `cancel` fires.
#[derive(Debug, Clone)]
pub struct Supervisor {
    /// What is supervised, for the logs.
    what: &'static str,
    options: Options,
}

impl Supervisor {
    pub fn new(what: &'static str, options: Options) -> Self {
        Self { what, options }
    }

    /// Calls `session` until it returns `Ok(())` (done: it saw `cancel`, or has nothing left
    /// to do); after each `Err`, logs it and waits [`Supervisor::delay`] unless `cancel` fires.
    /// A session watches `cancel` itself, so that it can close its connection cleanly.
    pub async fn run<F, Fut, E>(&self, cancel: &CancellationToken, mut session: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let mut failures = 0u32;
        loop {
            let started = Instant::now();
            let Err(e) = session().await else { return };
            if cancel.is_cancelled() {
                return;
            }
            if started.elapsed() >= self.options.healthy_after {
                failures = 0;
            }
            failures = failures.saturating_add(1);
            let delay = self.delay(failures, jitter());
            tracing::warn!(what = self.what, error = %e, retry_in_ms = delay.as_millis() as u64,
                "connection failed; reconnecting");
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// The delay after the `failures`-th failure in a row: `initial · 2^(failures-1)`, capped at
    /// `max`, then scaled by `jitter` in [0.5, 1] so that many clients that lost the same
    /// server do not come back in lock step.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        let exp = failures.saturating_sub(1).min(20);
        let full = self
            .options
            .initial
            .saturating_mul(1u32 << exp)
            .min(self.options.max);
        full.mul_f64(jitter.clamp(0.5, 1.0))
    }
}

/// A uniform number in [0.5, 1) from the standard library's per-process random hasher keys.
fn jitter() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    0.5 + (bits >> 11) as f64 / (1u64 << 53) as f64 / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn supervisor() -> Supervisor {
        Supervisor::new(
            "test",
            Options {
                initial: Duration::from_millis(100),
                max: Duration::from_secs(2),
                healthy_after: Duration::from_secs(30),
            },
        )
    }

    #[test]
    fn delay_doubles_up_to_the_cap_and_jitter_scales_it_down_at_most_by_half() {
        let s = supervisor();
        assert_eq!(s.delay(1, 1.0), Duration::from_millis(100));
        assert_eq!(s.delay(2, 1.0), Duration::from_millis(200));
        assert_eq!(s.delay(4, 1.0), Duration::from_millis(800));
        assert_eq!(s.delay(5, 1.0), Duration::from_millis(1_600));
        assert_eq!(s.delay(6, 1.0), Duration::from_secs(2));
        assert_eq!(s.delay(u32::MAX, 1.0), Duration::from_secs(2));
        assert_eq!(s.delay(2, 0.5), Duration::from_millis(100));
        assert_eq!(s.delay(2, 0.0), Duration::from_millis(100), "clamped");
        for _ in 0..100 {
            let j = jitter();
            assert!((0.5..1.0).contains(&j), "{j}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_a_failing_session_until_it_succeeds() {
        let calls = Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        let started = tokio::time::Instant::now();
        supervisor()
            .run(&CancellationToken::new(), move || {
                let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                async move { if n < 4 { Err("down") } else { Ok(()) } }
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        // Three failures: at least half of 100 + 200 + 400 ms went by (paused clock).
        assert!(started.elapsed() >= Duration::from_millis(350));
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_during_the_wait_ends_it_without_another_attempt() {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let calls = Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            stop.cancel();
        });
        supervisor()
            .run(&cancel, move || {
                seen.fetch_add(1, Ordering::SeqCst);
                async { Err::<(), _>("down") }
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
