//! The order a worker starts the steps it holds: by priority, with aging. Steps wait in one
//! lane per priority, each first in, first out; the next step is the head of the lane whose
//! head arrived earliest once each lane's arrival is counted `aging` later per level below
//! high. So a high-priority step goes ahead of the low ones already held, and a low one that
//! waited `2 × aging` longer than a new high one goes first: nothing starves.
//!
//! Low-priority steps may also be capped (`worker.low_priority_reserve`): at most `cap` of them
//! out (started, not yet [`Lanes::release`]d) at once, so a backlog of low work leaves slots
//! free and a normal or high step starts at once instead of waiting for a low one to end.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tasker_shared::flow::Priority;

/// Items waiting in priority lanes.
#[derive(Debug)]
pub struct Lanes<T> {
    lanes: [VecDeque<(Instant, T)>; 3],
    aging: Duration,
    /// The most low-priority items out at once (`None`: no cap).
    low_cap: Option<usize>,
    /// Low-priority items popped and not released yet.
    low_out: usize,
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
            low_cap: None,
            low_out: 0,
        }
    }

    /// Caps the low-priority items out at once (see the module's documentation).
    pub fn set_low_cap(&mut self, cap: Option<usize>) {
        self.low_cap = cap;
    }

    /// An item popped with `priority` is done: a low one frees its place under the cap.
    pub fn release(&mut self, priority: Option<Priority>) {
        if priority == Some(Priority::Low) {
            self.low_out = self.low_out.saturating_sub(1);
        }
    }

    /// Whether a lane may give its next item now (the low lane not at its cap).
    fn open(&self, rank: usize) -> bool {
        rank != Priority::Low.rank() as usize || self.low_cap.is_none_or(|cap| self.low_out < cap)
    }

    /// Whether [`Lanes::pop`] would give an item now.
    pub fn ready(&self) -> bool {
        self.lanes
            .iter()
            .enumerate()
            .any(|(rank, lane)| !lane.is_empty() && self.open(rank))
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

    /// The next item: the head of the open lane whose aged arrival is earliest. A low item
    /// counts against the cap until it is [`Lanes::release`]d.
    pub fn pop(&mut self) -> Option<T> {
        let mut best: Option<(usize, Instant)> = None;
        for (rank, lane) in self.lanes.iter().enumerate() {
            if let Some((at, _)) = lane.front()
                && self.open(rank)
            {
                let aged = *at + self.aging * rank as u32;
                if best.is_none_or(|(_, b)| aged < b) {
                    best = Some((rank, aged));
                }
            }
        }
        let (rank, _) = best?;
        if rank == Priority::Low.rank() as usize {
            self.low_out += 1;
        }
        self.lanes[rank].pop_front().map(|(_, item)| item)
    }

    /// Up to `n` items in the order [`Lanes::pop`] gives them.
    pub fn take(&mut self, n: usize) -> Vec<T> {
        let n = n.min(self.len());
        (0..n).map_while(|_| self.pop()).collect()
    }

    /// Every item still waiting, high first, whatever the cap (the worker is stopping: they go
    /// back to their queues unstarted).
    pub fn drain(&mut self) -> Vec<T> {
        self.lanes
            .iter_mut()
            .flat_map(|lane| lane.drain(..).map(|(_, item)| item))
            .collect()
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
            l.take(6),
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
    fn low_work_under_its_cap_leaves_room_for_the_rest() {
        let mut l = Lanes::new(Duration::from_secs(10));
        l.set_low_cap(Some(2));
        for i in 0..4 {
            l.push(Some(Priority::Low), format!("low{i}"));
        }
        assert_eq!(l.take(4), ["low0", "low1"], "two low out at most");
        assert!(!l.ready(), "only low work waits, at its cap");
        assert_eq!(l.pop(), None);
        l.push(None, "normal".to_owned());
        assert!(l.ready());
        assert_eq!(
            l.pop().as_deref(),
            Some("normal"),
            "the cap does not hold others"
        );
        l.release(None);
        assert_eq!(l.pop(), None, "releasing a normal item frees no low place");
        l.release(Some(Priority::Low));
        assert_eq!(l.pop().as_deref(), Some("low2"));
        assert_eq!(l.drain(), ["low3"], "a drain takes all, whatever the cap");
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
