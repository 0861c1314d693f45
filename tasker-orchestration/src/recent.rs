//! What PostgreSQL said lately about a credential (an API token, a broker user), trusted for a
//! few seconds so that a request or a result batch costs no extra query: a revoked token stops
//! working within [`TRUST_FOR`] on every orchestrator, at once on the one that revoked it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is trusted without asking again.
pub const TRUST_FOR: Duration = Duration::from_secs(5);
/// Most answers remembered at once.
const REMEMBERED_MAX: usize = 10_000;

/// Answers by key, each trusted for [`TRUST_FOR`].
#[derive(Debug)]
pub struct Recent<V> {
    seen: Mutex<HashMap<String, (V, Instant)>>,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Self {
            seen: Mutex::default(),
        }
    }
}

impl<V: Clone> Recent<V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (V, Instant)>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer for `key`, if it is still trusted.
    pub fn get(&self, key: &str) -> Option<V> {
        self.lock()
            .get(key)
            .filter(|(_, at)| at.elapsed() < TRUST_FOR)
            .map(|(v, _)| v.clone())
    }

    /// Remembers `value` for `key` from now on.
    pub fn put(&self, key: &str, value: V) {
        let mut seen = self.lock();
        if seen.len() >= REMEMBERED_MAX {
            seen.retain(|_, (_, at)| at.elapsed() < TRUST_FOR);
            if seen.len() >= REMEMBERED_MAX {
                seen.clear();
            }
        }
        seen.insert(key.to_owned(), (value, Instant::now()));
    }

    /// Forgets every answer `stale` picks (a credential revoked here).
    pub fn forget(&self, stale: impl Fn(&str, &V) -> bool) {
        self.lock().retain(|k, (v, _)| !stale(k, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_then_forgotten_on_demand() {
        let recent = Recent::default();
        recent.put("a", 1);
        recent.put("b", 2);
        assert_eq!(recent.get("a"), Some(1));
        assert_eq!(recent.get("c"), None);
        recent.forget(|_, v| *v == 1);
        assert_eq!((recent.get("a"), recent.get("b")), (None, Some(2)));
    }
}
