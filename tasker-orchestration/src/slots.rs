//! Counted slots per key: at most `max` held at once for one key (the connections of a peer,
//! the requests or long polls of a token). A slot is given back when its guard drops, however
//! the work it guarded ended.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// The slots of every key, each key with the same most.
#[derive(Debug)]
pub struct Slots<K> {
    max: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One slot held for `key`; dropping it gives it back.
#[derive(Debug)]
pub struct Slot<K: Hash + Eq + Clone> {
    slots: Arc<Slots<K>>,
    key: K,
}

impl<K: Hash + Eq + Clone> Slots<K> {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Slots {
            max,
            held: Mutex::default(),
        })
    }

    /// The most one key may hold.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A slot for `key`, or `None` when it holds `max` already.
    pub fn take(self: &Arc<Self>, key: &K) -> Option<Slot<K>> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(key.clone()).or_default();
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Slot {
            slots: self.clone(),
            key: key.clone(),
        })
    }

    /// Slots `key` holds now.
    #[cfg(test)]
    pub fn held(&self, key: &K) -> usize {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(key).copied().unwrap_or(0)
    }
}

impl<K: Hash + Eq + Clone> Drop for Slot<K> {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_slots_and_gets_them_back() {
        let slots = Slots::new(2);
        let (a1, a2) = (slots.take(&"a"), slots.take(&"a"));
        assert!(a1.is_some() && a2.is_some());
        assert!(slots.take(&"a").is_none(), "a third slot");
        assert!(slots.take(&"b").is_some(), "another key has its own");
        drop(a1);
        assert_eq!(slots.held(&"a"), 1);
        assert!(slots.take(&"a").is_some());
        drop(a2);
    }
}
