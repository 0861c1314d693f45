//! Names of the broker objects Tasker uses. Every queue name starts with a prefix so several
//! clusters (or test runs) can share one broker without seeing each other's messages.

/// The queue a namespace's step messages go to; only workers with templates in that namespace
/// consume it.
pub fn steps_queue(prefix: &str, namespace: &str) -> String {
    format!("{prefix}.steps.{namespace}")
}

/// The lanes of a namespace besides its steps queue (the normal lane): steps of high- and
/// low-priority tasks travel in queues of their own, so a worker's prefetch of a backlog in
/// one lane never holds back another's, and the worker takes high first.
pub const LANES: [&str; 2] = ["high", "low"];

/// The queue of a namespace's lane: `lane` `None` (or `"normal"`) is its steps queue; `high`
/// and `low` are `<steps queue>@high` and `@low` (`@` is in no namespace name).
pub fn lane_queue(prefix: &str, namespace: &str, lane: Option<&str>) -> String {
    match lane {
        None | Some("normal") => steps_queue(prefix, namespace),
        Some(lane) => format!("{prefix}.steps.{namespace}@{lane}"),
    }
}

/// Every queue a namespace's steps travel in: its steps queue, then its lanes.
pub fn namespace_queues(prefix: &str, namespace: &str) -> Vec<String> {
    std::iter::once(None)
        .chain(LANES.iter().copied().map(Some))
        .map(|lane| lane_queue(prefix, namespace, lane))
        .collect()
}

/// The queue all workers publish results to; every orchestrator consumes it.
pub fn results_queue(prefix: &str) -> String {
    format!("{prefix}.results")
}

/// The queue workers publish their steps' stream chunks to (through the results exchange,
/// routed by this name). One orchestrator at a time consumes it (a single active consumer), so
/// chunks are kept in the order they were published; another takes over when it goes.
pub fn streams_queue(prefix: &str) -> String {
    format!("{prefix}.streams")
}

/// The exchange workers publish results through: it routes them to [`results_queue`]. A
/// worker's broker user may write to it and to nothing else, so a worker cannot put messages
/// into another namespace's steps queue (the default exchange would let it).
pub fn results_exchange(prefix: &str) -> String {
    format!("{prefix}.results")
}

/// Where messages that cannot be processed end up, with their reason (see [`crate::dead`]);
/// the orchestrator keeps them in its `dead_letters` table.
pub fn dead_letter_queue(prefix: &str) -> String {
    format!("{prefix}.dead")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed() {
        assert_eq!(steps_queue("t1", "shop"), "t1.steps.shop");
        assert_eq!(results_queue("t1"), "t1.results");
        assert_eq!(results_exchange("t1"), "t1.results");
        assert_eq!(streams_queue("t1"), "t1.streams");
        assert_eq!(dead_letter_queue("t1"), "t1.dead");
        assert_eq!(lane_queue("t1", "shop", None), "t1.steps.shop");
        assert_eq!(lane_queue("t1", "shop", Some("normal")), "t1.steps.shop");
        assert_eq!(lane_queue("t1", "shop", Some("high")), "t1.steps.shop@high");
        assert_eq!(
            namespace_queues("t1", "a.b"),
            ["t1.steps.a.b", "t1.steps.a.b@high", "t1.steps.a.b@low"]
        );
    }
}
