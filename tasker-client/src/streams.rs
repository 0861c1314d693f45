//! What a task's steps stream (`ctx.emit`, `ctx.emit_text`; docs/streams.md):
//! [`Client::read_stream`] reads a page, [`Client::stream`] follows it live as Server-Sent
//! Events, and goes on after a dropped connection from the last offset it returned
//! (`Last-Event-ID`), so the caller sees every chunk once, in order.

use tasker_shared::api::{StreamChunk, StreamPage};
use uuid::Uuid;

use crate::client::{Client, decode, segment};
use crate::error::Error;
use crate::sse::Reconnecting;

/// Which part of a stream to read.
#[derive(Debug, Clone, Default)]
pub struct StreamQuery {
    /// The first offset wanted (0 by default).
    pub from: Option<i64>,
    /// Only this topic's chunks.
    pub topic: Option<String>,
    /// Chunks per page, 1 to 1,000 (500 by default); pages only.
    pub limit: Option<i64>,
    /// Merge in the chunks of the task's child tasks (at any depth) that the token may read;
    /// each chunk's `task_id` says whose it is.
    pub children: bool,
}

impl StreamQuery {
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(from) = self.from {
            q.push(("from", from.to_string()));
        }
        if let Some(topic) = &self.topic {
            q.push(("topic", topic.clone()));
        }
        if let Some(limit) = self.limit {
            q.push(("limit", limit.to_string()));
        }
        if self.children {
            q.push(("children", "true".into()));
        }
        q
    }
}

/// A task's stream followed live, from [`Client::stream`].
#[derive(Debug)]
pub struct TaskStream {
    client: Client,
    id: Uuid,
    /// What is followed (its `from` is where it began).
    query: StreamQuery,
    /// The offset wanted next.
    next: i64,
    events: Reconnecting,
    ended: bool,
}

impl Client {
    /// A page of a task's stream: its chunks from `q.from`, the offset to read next, and
    /// whether the stream is complete (nothing will follow).
    pub async fn read_stream(&self, id: Uuid, q: &StreamQuery) -> Result<StreamPage, Error> {
        let url = format!("{}/v1/tasks/{}/stream", self.base, segment(&id.to_string()));
        decode(self.http.get(url).query(&q.params()).send().await?).await
    }

    /// Follows a task's stream from `q.from` (`q.limit` is not used). Nothing is sent until
    /// the first [`TaskStream::next`].
    pub fn stream(&self, id: Uuid, q: &StreamQuery) -> TaskStream {
        TaskStream {
            client: self.clone(),
            id,
            query: StreamQuery {
                limit: None,
                ..q.clone()
            },
            next: q.from.unwrap_or(0),
            events: Reconnecting::default(),
            ended: false,
        }
    }
}

impl TaskStream {
    /// The next chunk; `None` once the stream is complete (the task ended, and every step
    /// attempt's stream with it). A dropped connection is opened again (with backoff) from the
    /// offset after the last chunk returned; an answer of the API refusing it is returned.
    pub async fn next(&mut self) -> Result<Option<StreamChunk>, Error> {
        let url = format!("{}/v1/tasks/{}/stream", self.client.base, self.id);
        while !self.ended {
            let http = &self.client.http;
            let q = StreamQuery {
                from: Some(self.next),
                ..self.query.clone()
            };
            let frame = self
                .events
                .next(|| http.get(&url).query(&q.params()))
                .await?;
            match frame.event.as_str() {
                "chunk" => {
                    let chunk: StreamChunk = serde_json::from_str(&frame.data)
                        .map_err(|e| Error::Answer(e.to_string()))?;
                    if chunk.offset < self.next {
                        continue;
                    }
                    self.next = chunk.offset + 1;
                    self.events.arrived();
                    return Ok(Some(chunk));
                }
                "end" => self.ended = true,
                _ => {}
            }
        }
        Ok(None)
    }

    /// The offset the stream goes on from.
    pub fn next_offset(&self) -> i64 {
        self.next
    }
}
