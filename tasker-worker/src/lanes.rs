//! The order a worker starts the steps it holds: by priority, with aging. Steps wait in one
//! lane per priority, each first in, first out; the next step is the head of the lane whose
//! head arrived earliest once each lane's arrival is counted `aging` later per level below
//! high. So a high-priority step goes ahead of the low ones already held, and a low one that
//! waited `2 × aging` longer than a new high one goes first: nothing starves.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tasker_shared::flow::Priority;

/// Items waiting in priority lanes.
#[derive(Debug)]
pub struct Lanes<T> {
    lanes: [VecDeque<(Instant, T)>; 3],
    aging: Duration,
}

impl<T> Default for Lanes<T> {
    fn default() -> Self {
        Self::new(Duration::from_millis(
            tasker_shared::config::DEFAULT_PRIORITY_AGING_MS,
        ))
    }
}

impl<T> Lanes<T> {
    pub fn new(aging: Duration) -> Self {
        Self {
            lanes: Default::default(),
            aging,
        }
    }

    /// Sets the aging (`worker.priority_aging_ms`).
    pub fn set_aging(&mut self, aging: Duration) {
        self.aging = aging;
    }

    /// Queues `item` at the back of its lane (`None`: normal).
    pub fn push(&mut self, priority: Option<Priority>, item: T) {
        self.push_at(priority, item, Instant::now());
    }

    fn push_at(&mut self, priority: Option<Priority>, item: T, at: Instant) {
        let rank = priority.unwrap_or_default().rank() as usize;
        self.lanes[rank].push_back((at, item));
    }

    /// The next item: the head of the lane whose aged arrival is earliest.
    pub fn pop(&mut self) -> Option<T> {
        let mut best: Option<(usize, Instant)> = None;
        for (rank, lane) in self.lanes.iter().enumerate() {
            if let Some((at, _)) = lane.front() {
                let aged = *at + self.aging * rank as u32;
                if best.is_none_or(|(_, b)| aged < b) {
                    best = Some((rank, aged));
                }
            }
        }
        best.and_then(|(rank, _)| self.lanes[rank].pop_front().map(|(_, item)| item))
    }

    /// Up to `n` items in the order [`Lanes::pop`] gives them.
    pub fn take(&mut self, n: usize) -> Vec<T> {
        let n = n.min(self.len());
        (0..n).filter_map(|_| self.pop()).collect()
    }

    /// Every item, in order.
    pub fn drain(&mut self) -> Vec<T> {
        self.take(self.len())
    }

    pub fn len(&self) -> usize {
        self.lanes.iter().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.iter().all(VecDeque::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_goes_ahead_of_what_is_held_and_each_lane_keeps_its_order() {
        let mut l = Lanes::new(Duration::from_secs(10));
        for i in 0..3 {
            l.push(Some(Priority::Low), format!("low{i}"));
        }
        l.push(None, "normal0".to_owned());
        l.push(Some(Priority::High), "high0".to_owned());
        l.push(Some(Priority::High), "high1".to_owned());
        assert_eq!(l.len(), 6);
        assert_eq!(
            l.drain(),
            ["high0", "high1", "normal0", "low0", "low1", "low2"]
        );
        assert!(l.is_empty());
    }

    #[test]
    fn a_step_that_waited_long_enough_goes_first_aging() {
        let mut l = Lanes::new(Duration::from_millis(100));
        let t0 = Instant::now();
        l.push_at(Some(Priority::Low), "old low", t0);
        l.push_at(None, "normal", t0 + Duration::from_millis(50));
        l.push_at(
            Some(Priority::High),
            "high",
            t0 + Duration::from_millis(250),
        );
        // Aged: old low at t0 + 200, normal at t0 + 150, high at t0 + 250.
        assert_eq!(l.take(3), ["normal", "old low", "high"]);
    }

    #[test]
    fn without_aging_strict_priority_then_arrival() {
        let mut l = Lanes::new(Duration::ZERO);
        let t0 = Instant::now();
        l.push_at(Some(Priority::Low), "low", t0);
        l.push_at(Some(Priority::High), "high", t0 + Duration::from_millis(1));
        assert_eq!(l.take(5), ["low", "high"], "zero aging: arrival order");
    }
}
