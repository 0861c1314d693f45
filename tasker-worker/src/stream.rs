//! Step streams from the handler's side: an [`Emitter`] per step attempt, which `ctx.emit` and
//! `ctx.emit_text` (and the FFI bindings' `emit`) hand chunks to without waiting. The worker
//! core publishes them in batches to the streams queue (`worker::stream`), and the attempt's
//! result only after its last chunk is confirmed, so a reader that sees the step finished has
//! its stream kept or on its way.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use serde_json::Value;
use tokio::sync::mpsc;

use tasker_shared::stream::{Chunk, MAX_CHUNK_BYTES, topic_problem};

/// Why a chunk was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The chunk itself cannot be sent (its topic, its size, JSON that cannot be stored); the
    /// stream goes on.
    #[error("invalid stream chunk: {0}")]
    Invalid(String),
    /// The attempt has streamed `worker.max_stream_bytes`: nothing more is taken, and the step
    /// fails with `stream_too_large` whatever the handler returns.
    #[error("the step's stream would exceed {limit} bytes (worker.max_stream_bytes)")]
    TooLarge { limit: u64 },
    /// The attempt has ended (or its worker is stopping): nothing more is taken.
    #[error("the step attempt has ended; its stream is closed")]
    Ended,
}

impl StreamError {
    /// The step error kind a handler that passes it on (`?`) fails with.
    pub fn kind(&self) -> &'static str {
        match self {
            StreamError::Invalid(_) => "invalid_stream_chunk",
            StreamError::TooLarge { .. } => "stream_too_large",
            StreamError::Ended => "stream_closed",
        }
    }
}

/// What to do once an attempt's end is confirmed: publish its result.
pub(crate) type Then = Box<dyn FnOnce() + Send>;

/// A chunk, or an attempt's end (its result goes out once the end is confirmed).
pub(crate) enum Emitted {
    Chunk(Chunk),
    End(Chunk, Then),
}

/// What the core hands a handler to stream with; cheap to clone.
#[derive(Clone)]
pub struct Emitter(Arc<Inner>);

struct Inner {
    task_id: uuid::Uuid,
    step_id: uuid::Uuid,
    attempt: u32,
    /// This run of the attempt (a copy run after its worker died is another).
    run: uuid::Uuid,
    max_bytes: u64,
    bytes: AtomicU64,
    overflowed: AtomicBool,
    /// The next seq, taken with the send so the channel keeps seq order; `None` once closed.
    next: Mutex<Option<u32>>,
    /// Weak: a context a handler keeps after its attempt ended does not hold the session's
    /// publisher open.
    tx: mpsc::WeakUnboundedSender<Emitted>,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("step_id", &self.0.step_id)
            .field("attempt", &self.0.attempt)
            .finish_non_exhaustive()
    }
}

impl Emitter {
    pub(crate) fn new(
        message: &tasker_shared::StepMessage,
        max_bytes: u64,
        tx: mpsc::WeakUnboundedSender<Emitted>,
    ) -> Self {
        Self(Arc::new(Inner {
            task_id: message.task_id,
            step_id: message.step_id,
            attempt: message.attempt,
            run: uuid::Uuid::now_v7(),
            max_bytes,
            bytes: AtomicU64::new(0),
            overflowed: AtomicBool::new(false),
            next: Mutex::new(Some(0)),
            tx,
        }))
    }

    /// Sends `data` (JSON) on `topic`.
    pub fn emit(&self, topic: &str, data: Value) -> Result<(), StreamError> {
        if let Err(p) =
            tasker_shared::json_check::check(&data, tasker_shared::json_check::MAX_DEPTH)
        {
            return Err(StreamError::Invalid(format!("its data {p}")));
        }
        let size = serde_json::to_vec(&data).map_or(usize::MAX, |b| b.len());
        self.send(topic, size, None, Some(data))
    }

    /// Sends `text` on `topic` (a token stream: each call one chunk).
    pub fn emit_text(&self, topic: &str, text: &str) -> Result<(), StreamError> {
        if text.contains('\0') {
            return Err(StreamError::Invalid(
                "its text holds a NUL character".into(),
            ));
        }
        self.send(topic, text.len(), Some(text.to_owned()), None)
    }

    fn send(
        &self,
        topic: &str,
        size: usize,
        text: Option<String>,
        data: Option<Value>,
    ) -> Result<(), StreamError> {
        let inner = &self.0;
        if let Some(p) = topic_problem(topic) {
            return Err(StreamError::Invalid(p));
        }
        if size > MAX_CHUNK_BYTES {
            return Err(StreamError::Invalid(format!(
                "it is {size} bytes; a chunk holds at most {MAX_CHUNK_BYTES}"
            )));
        }
        let mut next = inner.next.lock().unwrap_or_else(|p| p.into_inner());
        let Some(seq) = *next else {
            return Err(StreamError::Ended);
        };
        let limit = inner.max_bytes;
        if inner.overflowed.load(Ordering::Relaxed)
            || inner.bytes.load(Ordering::Relaxed) + size as u64 > limit
        {
            inner.overflowed.store(true, Ordering::Relaxed);
            return Err(StreamError::TooLarge { limit });
        }
        inner.bytes.fetch_add(size as u64, Ordering::Relaxed);
        let chunk = self.chunk(seq, topic.to_owned(), text, data, false);
        let sent = inner
            .tx
            .upgrade()
            .is_some_and(|tx| tx.send(Emitted::Chunk(chunk)).is_ok());
        if !sent {
            // The session ended: the step runs again elsewhere.
            *next = None;
            return Err(StreamError::Ended);
        }
        *next = Some(seq + 1);
        ::metrics::counter!(crate::metrics::STREAM_CHUNKS.name).increment(1);
        ::metrics::counter!(crate::metrics::STREAM_BYTES.name).increment(size as u64);
        Ok(())
    }

    fn chunk(
        &self,
        seq: u32,
        topic: String,
        text: Option<String>,
        data: Option<Value>,
        end: bool,
    ) -> Chunk {
        Chunk {
            task_id: self.0.task_id,
            step_id: self.0.step_id,
            attempt: self.0.attempt,
            seq,
            topic,
            text,
            data,
            end,
            at: Utc::now(),
            run: Some(self.0.run),
        }
    }

    /// Whether the attempt went past `worker.max_stream_bytes`.
    pub(crate) fn overflowed(&self) -> bool {
        self.0.overflowed.load(Ordering::Relaxed)
    }

    /// Closes the stream: nothing more is taken. The attempt's end chunk if it streamed
    /// anything (its result must follow it), else `None` (its result goes out at once).
    pub(crate) fn close(&self) -> Option<Chunk> {
        let mut next = self.0.next.lock().unwrap_or_else(|p| p.into_inner());
        match next.take() {
            Some(seq) if seq > 0 => Some(self.chunk(seq, "end".into(), None, None, true)),
            _ => None,
        }
    }

    /// Hands the attempt's end, and what publishes its result once the end is confirmed, to the
    /// stream publisher; gives `then` back if the publisher is gone.
    pub(crate) fn end(&self, end: Chunk, then: Then) -> Result<(), Then> {
        let Some(tx) = self.0.tx.upgrade() else {
            return Err(then);
        };
        tx.send(Emitted::End(end, then)).map_err(|e| match e.0 {
            Emitted::End(_, r) => r,
            Emitted::Chunk(_) => unreachable!("an end was sent"),
        })
    }
}
