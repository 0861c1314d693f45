//! What the core decides about an attempt by itself: the deadline it arms when a handler
//! starts, a step that arrives past its queue timeout, a result too large or unstorable.

use std::time::Duration;

use chrono::Utc;

use tasker_shared::{Outcome, StepMessage};

/// Longest run deadline the core arms: template validation allows 30 days; a message from
/// anywhere else is clamped rather than allowed to overflow the timer wheel.
const MAX_RUN: Duration = Duration::from_secs(30 * 24 * 3600);

/// When the core gives up on a started job: its timeout (clamped) plus a margin.
pub(crate) fn run_deadline(timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms).min(MAX_RUN) + Duration::from_millis(250)
}

/// The failure of a step received after its queue timeout, if it was.
pub(super) fn queue_timed_out(
    message: &StepMessage,
    now: chrono::DateTime<Utc>,
) -> Option<Outcome> {
    let limit = message.queue_timeout_ms?;
    let waited = (now - message.dispatched_at).num_milliseconds().max(0) as u64;
    (waited > limit).then(|| {
        Outcome::permanent(
            "queue_timeout",
            format!("no worker started the step within its queue timeout ({limit} ms; it waited {waited} ms)"),
        )
    })
}

/// A handler's result that PostgreSQL could not store (a NUL character, nesting too deep) or
/// that exceeds `max_bytes` fails its own step, permanently and with the reason, here at the
/// source. A requested retry delay is kept within a day, and only on a retryable failure.
pub(crate) fn storable(outcome: Outcome, max_bytes: usize) -> Outcome {
    let result = match outcome {
        Outcome::Success { ref result } => result,
        Outcome::Failure {
            error,
            retryable,
            retry_after_ms,
        } => {
            return Outcome::Failure {
                error,
                retryable,
                retry_after_ms: retry_after_ms
                    .filter(|_| retryable)
                    .map(|ms| ms.min(tasker_shared::message::MAX_RETRY_AFTER_MS)),
            };
        }
    };
    if let Err(problem) =
        tasker_shared::json_check::check(result, tasker_shared::json_check::MAX_DEPTH)
    {
        return Outcome::permanent("invalid_result", format!("the handler's result {problem}"));
    }
    let size = serde_json::to_vec(result).map_or(usize::MAX, |b| b.len());
    if size > max_bytes {
        return Outcome::permanent(
            "result_too_large",
            format!(
                "the handler's result is {size} bytes of JSON; the limit is {max_bytes} (worker.max_result_bytes)"
            ),
        );
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio_util::time::DelayQueue;

    fn message(timeout_ms: u64, queue_timeout_ms: Option<u64>, waited_ms: i64) -> StepMessage {
        StepMessage {
            dispatched_at: Utc::now() - chrono::Duration::milliseconds(waited_ms),
            timeout_ms,
            queue_timeout_ms,
            ..crate::test_support::test_message()
        }
    }

    #[test]
    fn a_huge_timeout_is_clamped_instead_of_overflowing_the_timer() {
        assert_eq!(
            run_deadline(message(2_000, None, 0).timeout_ms),
            Duration::from_millis(2_250)
        );
        let clamped = run_deadline(message(u64::MAX, None, 0).timeout_ms);
        assert_eq!(clamped, MAX_RUN + Duration::from_millis(250));
        // The timer wheel takes it (it panics past about two years).
        let mut q: DelayQueue<u64> = DelayQueue::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async { q.insert(1, clamped) });
    }

    #[test]
    fn only_a_step_past_its_queue_timeout_is_refused_on_arrival() {
        let now = Utc::now();
        assert!(queue_timed_out(&message(1_000, None, 3_600_000), now).is_none());
        assert!(queue_timed_out(&message(1_000, Some(60_000), 1_000), now).is_none());
        match queue_timed_out(&message(1_000, Some(60_000), 120_000), now) {
            Some(Outcome::Failure {
                error, retryable, ..
            }) => {
                assert_eq!(error.kind, "queue_timeout");
                assert!(!retryable);
            }
            other => panic!("expected a queue_timeout failure, got {other:?}"),
        }
    }

    #[test]
    fn a_result_that_cannot_be_stored_fails_its_own_step() {
        let ok = Outcome::Success {
            result: json!({"a": "fine"}),
        };
        assert_eq!(storable(ok.clone(), 1 << 20), ok);
        match storable(
            Outcome::Success {
                result: json!({"a": "x".repeat(100)}),
            },
            64,
        ) {
            Outcome::Failure {
                error, retryable, ..
            } => {
                assert_eq!(error.kind, "result_too_large");
                assert!(error.message.contains("limit is 64"), "{}", error.message);
                assert!(!retryable);
            }
            other => panic!("expected result_too_large, got {other:?}"),
        }
        match storable(
            Outcome::Success {
                result: json!({"a": "bad\u{0}"}),
            },
            1 << 20,
        ) {
            Outcome::Failure {
                error, retryable, ..
            } => {
                assert_eq!(error.kind, "invalid_result");
                assert!(error.message.contains("/a"), "{}", error.message);
                assert!(!retryable);
            }
            other => panic!("expected invalid_result, got {other:?}"),
        }
    }
}
