//! Names of the broker objects Tasker uses. Every queue name starts with a prefix so several
//! clusters (or test runs) can share one broker without seeing each other's messages.

/// The queue a namespace's step messages go to; only workers with templates in that namespace
/// consume it.
pub fn steps_queue(prefix: &str, namespace: &str) -> String {
    format!("{prefix}.steps.{namespace}")
}

/// The queue all workers publish results to; every orchestrator consumes it.
pub fn results_queue(prefix: &str) -> String {
    format!("{prefix}.results")
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
        assert_eq!(dead_letter_queue("t1"), "t1.dead");
    }
}
