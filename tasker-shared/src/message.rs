//! Messages that cross the broker. A [`StepMessage`] carries everything a worker needs to run a
//! step (no database access on the worker side); a [`StepResult`] carries the outcome back.
//!
//! One broker message carries a **batch**: a JSON array of step messages (or of results), so
//! the broker's fixed cost per message is paid once per batch, not once per step. A single
//! object (what releases before batching sent) is still read as a batch of one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// One attempt of one step, sent to the namespace's worker queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMessage {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub namespace: String,
    pub task_name: String,
    pub step_name: String,
    pub handler: String,
    /// 1-based attempt number; a result is accepted only for the step's current attempt.
    pub attempt: u32,
    pub max_attempts: u32,
    /// The task's input context (`null` when [`context_by_reference`](Self::context_by_reference)).
    pub context: Value,
    /// The context was too large to copy into every step message: the worker core fetches it
    /// from the orchestrator (`GET /v1/tasks/{id}`) before the handler runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_by_reference: bool,
    /// Results of the step's completed parents, by step name (a batch that failed under
    /// `on_failure: continue` appears as `{"failed": true, "error": …}`). Empty when
    /// [`parent_results_by_reference`](Self::parent_results_by_reference).
    pub parent_results: Map<String, Value>,
    /// The parent results were too many or too large for the message: the worker core reads
    /// them page by page from the orchestrator
    /// (`GET /v1/tasks/{task}/steps/{step}/parent_results`) before the handler runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parent_results_by_reference: bool,
    /// The batch of a `batch_worker` instance, as its batchable parent returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    pub dispatched_at: DateTime<Utc>,
    /// How long the handler may run, from its start, in milliseconds.
    pub timeout_ms: u64,
    /// How long after `dispatched_at` the step may still be started, in milliseconds; `None`:
    /// no limit. A worker that receives it later reports a `queue_timeout` failure instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_timeout_ms: Option<u64>,
    /// W3C trace context of the span that dispatched it, when tracing is on (the handler's span
    /// is its child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Its task's priority when not normal: the lane it travels in, and the order a worker
    /// starts the steps it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<crate::flow::Priority>,
    /// Not the attempt's first message (its orchestrator died before it could tell whether the
    /// first went out, and another sent it again): a worker asks whether the attempt is still
    /// open before running it, as it does for a message the broker delivers again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resent: bool,
}

/// The outcome of one attempt, sent to the results queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub attempt: u32,
    pub outcome: Outcome,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// Which worker ran it (for logs and the API).
    pub worker: String,
    /// W3C trace context of the span that published it, when tracing is on (the orchestrator's
    /// commit span is its child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// How many chunks the attempt streamed, its end included (`None`: none): the orchestrator
    /// counts its stream complete once it has kept that many (docs/streams.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streamed: Option<u32>,
}

/// Longest delay a handler may ask for before its step's next attempt: a day, the longest
/// backoff a template can set.
pub const MAX_RETRY_AFTER_MS: u64 = 86_400_000;

/// What a handler produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Success {
        result: Value,
    },
    Failure {
        error: StepError,
        retryable: bool,
        /// A retryable failure's own delay before the next attempt, in place of the step's
        /// backoff policy (at most [`MAX_RETRY_AFTER_MS`]); ignored for a permanent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
}

impl Outcome {
    /// A failure that is not retried.
    pub fn permanent(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::failure(StepError::new(kind, message), false)
    }

    /// A failure retried by the step's policy (`retryable`) or not, with no delay of its own.
    pub fn failure(error: StepError, retryable: bool) -> Self {
        Outcome::Failure {
            error,
            retryable,
            retry_after_ms: None,
        }
    }
}

impl StepResult {
    /// A permanent failure that Tasker records for an attempt itself, now — no handler's result
    /// (a step too large to send, or never started in time).
    pub fn permanent_failure(
        task_id: Uuid,
        step_id: Uuid,
        attempt: u32,
        kind: &str,
        message: String,
        worker: &str,
    ) -> Self {
        let now = Utc::now();
        StepResult {
            task_id,
            step_id,
            attempt,
            outcome: Outcome::permanent(kind, message),
            started_at: now,
            finished_at: now,
            worker: worker.to_owned(),
            traceparent: None,
            streamed: None,
        }
    }
}

/// A handler failure as stored with the step: the error's class (or kind), message and backtrace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepError {
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backtrace: Option<String>,
}

impl StepError {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            backtrace: None,
        }
    }
}

/// Decodes a broker message body: a JSON array of `T`, or a single `T`. `T` may borrow from
/// the body (`&RawValue` keeps each item as its JSON text).
pub fn decode_batch<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<Vec<T>> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => serde_json::from_slice(body),
        _ => serde_json::from_slice(body).map(|one| vec![one]),
    }
}

/// Packs items already encoded as JSON into batches (JSON arrays) of at most `max_items`
/// items and `max_bytes` bytes each, keeping their order. An item that alone exceeds
/// `max_bytes` is handed back as `Err((index, item))` instead of being packed.
pub fn pack_batches(
    encoded: Vec<Vec<u8>>,
    max_items: usize,
    max_bytes: usize,
) -> Vec<Result<Batch, (usize, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut current = Batch::default();
    for (i, item) in encoded.into_iter().enumerate() {
        // The brackets and one comma per item.
        if item.len() + 2 > max_bytes {
            out.push(Err((i, item)));
            continue;
        }
        if !current.items.is_empty()
            && (current.items.len() >= max_items.max(1)
                || current.body.len() + item.len() + 2 > max_bytes)
        {
            out.push(Ok(std::mem::take(&mut current).finish()));
        }
        current
            .body
            .push(if current.items.is_empty() { b'[' } else { b',' });
        current.body.extend_from_slice(&item);
        current.items.push(i);
    }
    if !current.items.is_empty() {
        out.push(Ok(current.finish()));
    }
    out
}

/// One packed broker message: the JSON array and the indexes of the items it carries.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Batch {
    pub body: Vec<u8>,
    pub items: Vec<usize>,
}

impl Batch {
    fn finish(mut self) -> Self {
        self.body.push(b']');
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcome_wire_format_is_tagged_by_status() {
        let ok = serde_json::to_value(Outcome::Success {
            result: json!({"n": 1}),
        })
        .unwrap();
        assert_eq!(ok, json!({"status": "success", "result": {"n": 1}}));
        let failed: Outcome = serde_json::from_value(json!({
            "status": "failure",
            "retryable": false,
            "error": {"kind": "ValueError", "message": "bad"}
        }))
        .unwrap();
        assert_eq!(
            failed,
            Outcome::failure(StepError::new("ValueError", "bad"), false)
        );
        let later = Outcome::Failure {
            error: StepError::new("rate_limited", "429"),
            retryable: true,
            retry_after_ms: Some(1_500),
        };
        let wire = serde_json::to_value(&later).unwrap();
        assert_eq!(wire["retry_after_ms"], 1_500);
        assert_eq!(serde_json::from_value::<Outcome>(wire).unwrap(), later);
    }

    #[test]
    fn a_batch_is_an_array_and_a_single_object_still_reads_as_one() {
        let bodies: Vec<Vec<u8>> = (0..5)
            .map(|i| format!("{{\"n\":{i}}}").into_bytes())
            .collect();
        let packed = pack_batches(bodies, 2, 1 << 20);
        let sizes: Vec<Vec<usize>> = packed
            .iter()
            .map(|b| b.as_ref().unwrap().items.clone())
            .collect();
        assert_eq!(sizes, vec![vec![0, 1], vec![2, 3], vec![4]]);
        let first: Vec<serde_json::Value> =
            decode_batch(&packed[0].as_ref().unwrap().body).unwrap();
        assert_eq!(first, vec![json!({"n": 0}), json!({"n": 1})]);
        let one: Vec<serde_json::Value> = decode_batch(b" {\"n\": 7}").unwrap();
        assert_eq!(one, vec![json!({"n": 7})]);
        assert!(decode_batch::<StepResult>(b"[{\"task_id\": 1}]").is_err());
    }

    #[test]
    fn batches_respect_the_byte_limit_and_refuse_what_cannot_fit() {
        let small = br#"{"a":1}"#.to_vec();
        let big = vec![b'1'; 100];
        let packed = pack_batches(vec![small.clone(), big, small.clone(), small], 100, 20);
        let refused: Vec<usize> = packed
            .iter()
            .filter_map(|b| b.clone().err())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(refused, vec![1]);
        let sent: Vec<Batch> = packed.into_iter().flatten().collect();
        assert_eq!(
            sent.iter().map(|b| b.items.clone()).collect::<Vec<_>>(),
            vec![vec![0, 2], vec![3]]
        );
        assert!(sent.iter().all(|b| b.body.len() <= 20));
        for b in &sent {
            assert_eq!(
                decode_batch::<serde_json::Value>(&b.body).unwrap().len(),
                b.items.len()
            );
        }
    }

    #[test]
    fn malformed_result_is_rejected() {
        let err = serde_json::from_value::<StepResult>(json!({"task_id": "nope"})).unwrap_err();
        assert!(
            err.to_string().contains("UUID") || err.to_string().contains("uuid"),
            "{err}"
        );
    }
}
