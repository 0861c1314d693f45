//! Server-Sent Events as the API sends them (`GET /v1/tasks/{id}/events`, `…/stream`): bytes
//! gathered into frames (up to their blank line), each read into its event name, id and data,
//! from a connection opened again (with backoff) whenever it drops.

use crate::client::decode;
use crate::error::Error;
use crate::wait::Backoff;

/// A stream of events that opens its connection again when it drops.
#[derive(Debug, Default)]
pub(crate) struct Reconnecting {
    response: Option<reqwest::Response>,
    frames: Frames,
    backoff: Backoff,
}

impl Reconnecting {
    /// The next frame. With no connection (at first, or after one dropped) `request` opens
    /// one; a drop is retried with backoff, an answer of the API refusing it is returned.
    pub(crate) async fn next(
        &mut self,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Frame, Error> {
        loop {
            if let Some(frame) = self.frames.next() {
                return Ok(frame);
            }
            let read = match &mut self.response {
                Some(r) => r.chunk().await.map_err(Error::from),
                None => match open(request()).await {
                    Ok(r) => {
                        self.response = Some(r);
                        continue;
                    }
                    Err(e) => Err(e),
                },
            };
            match read {
                Ok(Some(bytes)) => self.frames.push(&bytes),
                // The stream ended (an orchestrator stopping): open it again.
                Ok(None) => self.dropped(),
                Err(e) if e.is_transient() => {
                    self.dropped();
                    tokio::time::sleep(self.backoff.next()).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Something came through: the next drop waits the shortest backoff again.
    pub(crate) fn arrived(&mut self) {
        self.backoff.reset();
    }

    fn dropped(&mut self) {
        self.response = None;
        self.frames.clear();
    }
}

async fn open(request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
    let resp = request
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await?;
    if !resp.status().is_success() {
        let refused = decode::<serde_json::Value>(resp).await;
        return Err(refused.expect_err("an answer that is not 2xx decodes as an error"));
    }
    Ok(resp)
}

/// One event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Frame {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

/// The bytes received and not yet read as whole frames.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    buf: Vec<u8>,
}

impl Frames {
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets a partial frame (the connection dropped in the middle of it).
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }

    /// The next whole frame; `None` until one has arrived. A comment-only frame (keep-alive)
    /// reads as a frame with no event name and no data.
    pub(crate) fn next(&mut self) -> Option<Frame> {
        let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
        let text = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + 2);
        let mut frame = Frame::default();
        let mut data = Vec::new();
        for line in text.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => frame.event = value.to_owned(),
                "id" => frame.id = Some(value.to_owned()),
                "data" => data.push(value),
                _ => {}
            }
        }
        frame.data = data.join("\n");
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_whole_whatever_the_bytes_arrive_in() {
        let mut f = Frames::default();
        f.push(b": keep-alive\n\nid: 7\nevent: chunk\nda");
        assert_eq!(f.next(), Some(Frame::default()));
        assert_eq!(f.next(), None);
        f.push(b"ta: {\"a\":1}\ndata: x\n\n");
        let frame = f.next().expect("a whole frame");
        assert_eq!(frame.event, "chunk");
        assert_eq!(frame.id.as_deref(), Some("7"));
        assert_eq!(frame.data, "{\"a\":1}\nx");
    }
}
