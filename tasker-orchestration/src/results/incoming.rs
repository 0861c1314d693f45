//! A result as the orchestrator reads it from a worker's message: its identity and the shape of
//! its outcome checked, its value left as the worker's JSON text for PostgreSQL.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tasker_shared::StepError;
use uuid::Uuid;

/// A result as the orchestrator reads it: its identity and the shape of its outcome checked,
/// its value left as the worker's JSON text for PostgreSQL. (A batchable step's result can list
/// 100,000 batches; as a `serde_json::Value` tree that is ~600 bytes a batch, only to be encoded
/// again for the database.)
#[derive(Debug)]
pub(super) struct Incoming<'a> {
    raw: &'a RawValue,
    pub(super) head: Head,
}

/// Everything of a [`StepResult`] but the value of a success, which is skipped unparsed.
#[derive(Debug, Deserialize)]
pub(super) struct Head {
    pub(super) task_id: Uuid,
    pub(super) step_id: Uuid,
    pub(super) attempt: u32,
    outcome: OutcomeShape,
    pub(super) started_at: DateTime<Utc>,
    pub(super) finished_at: DateTime<Utc>,
    pub(super) worker: String,
    /// The worker's result span, when tracing is on.
    #[serde(default)]
    pub(super) traceparent: Option<String>,
    /// How many chunks the attempt streamed, its end included.
    #[serde(default)]
    pub(super) streamed: Option<u32>,
}

/// The shape of an [`Outcome`], checked without building the success's value.
#[derive(Debug, Deserialize)]
struct OutcomeShape {
    status: Status,
    #[serde(default)]
    result: Present,
    error: Option<StepError>,
    retryable: Option<bool>,
    /// Checked to be a whole number of milliseconds; PostgreSQL caps it at a day.
    #[serde(default)]
    #[allow(dead_code)]
    retry_after_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Success,
    Failure,
}

/// Whether a field was there (any JSON value, `null` included), skipped without allocating.
#[derive(Debug, Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

impl<'a> Incoming<'a> {
    pub(super) fn read(raw: &'a RawValue) -> serde_json::Result<Self> {
        let head: Head = serde_json::from_str(raw.get())?;
        let o = &head.outcome;
        let complete = match o.status {
            Status::Success => o.result.0,
            Status::Failure => o.error.is_some() && o.retryable.is_some(),
        };
        if !complete {
            return Err(serde::de::Error::custom(
                "an outcome needs `result` (success) or `error` and `retryable` (failure)",
            ));
        }
        Ok(Self { raw, head })
    }
}

impl Serialize for Incoming<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasker_shared::StepResult;

    fn read(json: &str) -> serde_json::Result<(String, Uuid)> {
        let raw: &RawValue = serde_json::from_str(json)?;
        Incoming::read(raw).map(|i| (serde_json::to_string(&i).unwrap(), i.head.step_id))
    }

    fn result(outcome: &str) -> String {
        format!(
            r#"{{"task_id":"{}","step_id":"{}","attempt":1,"outcome":{outcome},
               "started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z","worker":"w"}}"#,
            Uuid::nil(),
            Uuid::max()
        )
    }

    #[test]
    fn a_result_passes_through_as_the_worker_wrote_it() {
        let text = result(r#"{"status":"success","result":{"batches":[{"start":0,"end":1}]}}"#);
        let (out, step) = read(&text).unwrap();
        assert_eq!(out, text, "re-encoded instead of passed through");
        assert_eq!(step, Uuid::max());
        // It is what a StepResult reads.
        let typed: StepResult = serde_json::from_str(&out).unwrap();
        assert_eq!(typed.step_id, Uuid::max());
        // A null result is a result.
        assert!(read(&result(r#"{"status":"success","result":null}"#)).is_ok());
        let failure = r#"{"status":"failure","error":{"kind":"k","message":"m"},"retryable":true}"#;
        assert!(read(&result(failure)).is_ok());
        let later = r#"{"status":"failure","error":{"kind":"k","message":"m"},"retryable":true,"retry_after_ms":2500}"#;
        assert!(read(&result(later)).is_ok());
    }

    #[test]
    fn an_incomplete_outcome_is_malformed() {
        for outcome in [
            r#"{"status":"success"}"#,
            r#"{"status":"failure","error":{"kind":"k","message":"m"}}"#,
            r#"{"status":"failure","retryable":false}"#,
            r#"{"status":"done","result":1}"#,
            r#"{"status":"failure","error":{"kind":"k"},"retryable":false}"#,
            r#"{"status":"failure","error":{"kind":"k","message":"m"},"retryable":true,"retry_after_ms":-1}"#,
            r#"{"status":"failure","error":{"kind":"k","message":"m"},"retryable":true,"retry_after_ms":"soon"}"#,
        ] {
            assert!(read(&result(outcome)).is_err(), "{outcome} was accepted");
        }
        assert!(read(r#"{"step_id":"x"}"#).is_err());
    }
}
