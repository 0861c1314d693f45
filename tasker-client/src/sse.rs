//! Server-Sent Events as the API sends them (`GET /v1/tasks/{id}/events`, `…/stream`): bytes
//! gathered into frames (up to their blank line), each read into its event name, id and data.

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
