//! Step streams: what a handler emits while it runs (`ctx.emit(topic, data)`,
//! `ctx.emit_text(topic, text)`), on its way from the worker to the orchestrator. A worker
//! publishes chunks in batches through the results exchange to the streams queue; the
//! orchestrator gives each a task-wide offset, hands it to live readers and keeps it for the
//! task's retention.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Most bytes of one chunk's text or JSON data.
pub const MAX_CHUNK_BYTES: usize = 256 * 1024;

/// Most bytes a step attempt may emit unless its template says otherwise
/// (`max_stream_bytes`); past it the step fails with `stream_too_large`.
pub const DEFAULT_MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;

/// The most a template may allow one step attempt, and what the orchestrator keeps of an
/// attempt whatever its worker sends.
pub const MAX_STREAM_BYTES_CEILING: u64 = 1024 * 1024 * 1024;

/// Longest topic name.
pub const MAX_TOPIC_CHARS: usize = 100;

/// One chunk as a worker publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chunk {
    pub task_id: Uuid,
    pub step_id: Uuid,
    /// The step attempt that emitted it (1-based).
    pub attempt: u32,
    /// Its place in the attempt's stream, from 0.
    pub seq: u32,
    pub topic: String,
    /// What `emit_text` sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What `emit` sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The attempt's stream ended here (no text or data): sent after its last chunk, before its
    /// result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end: bool,
    /// When it was emitted.
    pub at: DateTime<Utc>,
    /// The run of the attempt that emitted it: a worker that died mid-stream has its step run
    /// again under the same attempt, by a new run whose stream starts over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Uuid>,
}

impl Chunk {
    /// Bytes it counts against its attempt's `max_stream_bytes`: its text, or its data as JSON.
    pub fn size(&self) -> usize {
        match (&self.text, &self.data) {
            (Some(text), _) => text.len(),
            (None, Some(data)) => serde_json::to_vec(data).map_or(usize::MAX, |b| b.len()),
            (None, None) => 0,
        }
    }

    /// Why the orchestrator would not keep it, if it would not (whoever sent it).
    pub fn problem(&self) -> Option<String> {
        if let Some(p) = topic_problem(&self.topic) {
            return Some(p);
        }
        if self.attempt == 0 {
            return Some("attempt 0 (attempts count from 1)".into());
        }
        match (&self.text, &self.data, self.end) {
            (Some(_), Some(_), _) => return Some("both `text` and `data`".into()),
            (Some(_), _, true) | (_, Some(_), true) => {
                return Some("an `end` chunk carries no text or data".into());
            }
            (None, None, false) => return Some("neither `text` nor `data`".into()),
            _ => {}
        }
        if let Some(text) = &self.text
            && text.contains('\0')
        {
            return Some("its text holds a NUL character".into());
        }
        if let Some(data) = &self.data
            && let Err(p) = crate::json_check::check(data, crate::json_check::MAX_DEPTH)
        {
            return Some(format!("its data {p}"));
        }
        let size = self.size();
        (size > MAX_CHUNK_BYTES)
            .then(|| format!("it is {size} bytes; a chunk holds at most {MAX_CHUNK_BYTES}"))
    }
}

/// Why `topic` cannot name a stream topic, if it cannot: 1 to 100 characters, none of them a
/// control character.
pub fn topic_problem(topic: &str) -> Option<String> {
    let chars = topic.chars().count();
    if chars == 0 || chars > MAX_TOPIC_CHARS {
        return Some(format!(
            "a topic is 1 to {MAX_TOPIC_CHARS} characters (this one has {chars})"
        ));
    }
    topic
        .chars()
        .any(char::is_control)
        .then(|| format!("the topic {topic:?} holds a control character"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(text: Option<&str>, data: Option<Value>, end: bool) -> Chunk {
        Chunk {
            task_id: Uuid::nil(),
            step_id: Uuid::nil(),
            attempt: 1,
            seq: 0,
            topic: "tokens".into(),
            text: text.map(str::to_owned),
            data,
            end,
            at: Utc::now(),
            run: None,
        }
    }

    #[test]
    fn a_chunk_carries_text_or_data_and_an_end_carries_neither() {
        assert_eq!(chunk(Some("hi"), None, false).problem(), None);
        assert_eq!(chunk(None, Some(json!({"pct": 4})), false).problem(), None);
        assert_eq!(chunk(None, None, true).problem(), None);
        for bad in [
            chunk(Some("a"), Some(json!(1)), false),
            chunk(None, None, false),
            chunk(Some("a"), None, true),
            chunk(Some("nul\0"), None, false),
            chunk(Some(&"x".repeat(MAX_CHUNK_BYTES + 1)), None, false),
        ] {
            assert!(bad.problem().is_some(), "{bad:?}");
        }
        let mut no_topic = chunk(Some("a"), None, false);
        no_topic.topic = String::new();
        assert!(no_topic.problem().unwrap().contains("1 to 100"));
        no_topic.topic = "a\nb".into();
        assert!(no_topic.problem().unwrap().contains("control"));
    }

    #[test]
    fn the_wire_form_leaves_out_what_a_chunk_does_not_carry() {
        let c = chunk(Some("hi"), None, false);
        let wire = serde_json::to_value(&c).unwrap();
        assert!(wire.get("data").is_none() && wire.get("end").is_none());
        assert_eq!(serde_json::from_value::<Chunk>(wire).unwrap(), c);
        assert_eq!(chunk(None, Some(json!([1, 2])), false).size(), 5);
    }
}
