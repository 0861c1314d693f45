//! Waiting for a task that rides through restarts: a wait is a series of long polls, and a
//! poll the connection drops (an orchestrator or a proxy restarting, a refused connection, a
//! gateway's 502/503/504) is sent again with backoff until the wait's own deadline. An answer
//! of the API itself (a 4xx: no such task, a token refused) ends the wait at once.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use crate::client::Client;
use crate::error::Error;
use tasker_shared::api::Task;

/// The longest single long poll: below the server's default cap (`max_wait_seconds`, 300) and
/// short enough that proxies keep the request open.
const LONGEST_POLL: Duration = Duration::from_secs(25);

impl Client {
    /// Waits up to `timeout` for a task to become terminal, and returns it as it is then. Any
    /// `timeout` works: the wait is made of long polls short enough for the server's cap
    /// (`orchestrator.max_wait_seconds`), halved if a server with a lower cap refuses one.
    /// A poll that fails for the connection's sake ([`Error::is_transient`]) is sent again
    /// with backoff (0.1 s doubling to 2 s) until the deadline; past it, that error is
    /// returned.
    pub async fn wait(&self, id: Uuid, timeout: Duration) -> Result<Task, Error> {
        let deadline = Instant::now() + timeout;
        let mut poll = LONGEST_POLL;
        let mut backoff = Backoff::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.task(id, Some(left.min(poll))).await {
                Ok(task) if task.is_terminal() || left <= poll => return Ok(task),
                Ok(_) => backoff.reset(),
                Err(Error::Api {
                    status: 400, code, ..
                }) if code == "invalid_wait" && poll > Duration::from_secs(1) => {
                    poll /= 2;
                }
                Err(e) if e.is_transient() => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(e);
                    }
                    tokio::time::sleep(backoff.next().min(left)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Error {
    /// Whether the call failed for the connection's sake and may succeed if sent again: no
    /// answer (refused, reset, dropped, timed out; not a certificate that failed to verify),
    /// or a gateway's or a restarting service's 502, 503 or 504. Never an answer of the API
    /// refusing the request (4xx).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Http(e) => !is_certificate_error(e),
            Error::Api { status, .. } => matches!(status, 502..=504),
            Error::Tls(_) | Error::Answer(_) => false,
        }
    }
}

/// Whether a TLS handshake failed on its merits (a certificate, a protocol): sending again
/// cannot help.
fn is_certificate_error(e: &reqwest::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.is::<rustls::Error>() {
            return true;
        }
        // An io::Error's source() skips the error it wraps: look at that one too.
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io
                .get_ref()
                .is_some_and(|inner| inner.is::<rustls::Error>())
        {
            return true;
        }
        next = err.source();
    }
    false
}

/// Delays between attempts: 0.1 s doubling up to 2 s, each between half and all of its step
/// (jitter, so clients cut off together do not come back together).
#[derive(Debug)]
pub(crate) struct Backoff {
    step: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);

    pub(crate) fn new() -> Self {
        Self { step: Self::FIRST }
    }

    pub(crate) fn reset(&mut self) {
        self.step = Self::FIRST;
    }

    pub(crate) fn next(&mut self) -> Duration {
        let step = self.step;
        self.step = (step * 2).min(Self::MAX);
        // A random fraction from std's per-process random hasher keys: no RNG crate for this.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let fraction = (random % 1_000) as f64 / 1_000.0;
        step.mul_f64(0.5 + fraction / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_with_jitter_within_each_step() {
        let mut b = Backoff::new();
        let steps: Vec<Duration> = (0..8).map(|_| b.next()).collect();
        let expected = [100, 200, 400, 800, 1600, 2000, 2000, 2000];
        for (got, full) in steps.iter().zip(expected) {
            let full = Duration::from_millis(full);
            assert!(
                *got >= full / 2 && *got <= full,
                "{got:?} not in [{:?}, {full:?}]",
                full / 2
            );
        }
        b.reset();
        assert!(b.next() <= Duration::from_millis(100));
    }

    #[test]
    fn only_the_connections_failures_are_transient() {
        let api = |status| Error::Api {
            status,
            code: "x".into(),
            message: "m".into(),
        };
        assert!(api(502).is_transient());
        assert!(api(503).is_transient());
        assert!(api(504).is_transient());
        for status in [400, 401, 403, 404, 409, 410, 500] {
            assert!(!api(status).is_transient(), "{status}");
        }
        assert!(!Error::Tls("no certificate".into()).is_transient());
    }
}
