//! A task followed live: `GET /v1/tasks/{id}/events` pushes a snapshot of the task and its
//! steps whenever it changes (what the dashboard follows). [`Client::follow`] reads them, and
//! opens the stream again, with backoff, when the connection drops.

use serde::Deserialize;
use uuid::Uuid;

use crate::client::{Client, decode};
use crate::error::Error;
use crate::sse::Frames;
use crate::wait::Backoff;

/// A task as the live stream shows it, reduced to what following it needs: its state, its
/// first 1,000 steps' names and states, and whether it has more.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "Frame")]
pub struct TaskSnapshot {
    /// The task's state (`running`, `complete`, …).
    pub state: String,
    pub steps: Vec<StepState>,
    /// `true`: the task has more steps than `steps` holds.
    pub more_steps: bool,
}

/// A step's name and state in a [`TaskSnapshot`].
#[derive(Debug, Clone, Deserialize)]
pub struct StepState {
    pub name: String,
    /// `pending`, `enqueued`, `completed`, `skipped`, `failed`, …
    pub state: String,
}

/// A `snapshot` event's data as sent (its other fields left unread).
#[derive(Deserialize)]
struct Frame {
    task: FrameTask,
    steps: Vec<StepState>,
    #[serde(default)]
    more_steps: bool,
}

#[derive(Deserialize)]
struct FrameTask {
    state: String,
}

impl From<Frame> for TaskSnapshot {
    fn from(f: Frame) -> Self {
        TaskSnapshot {
            state: f.task.state,
            steps: f.steps,
            more_steps: f.more_steps,
        }
    }
}

impl TaskSnapshot {
    /// Steps that are done (`completed` or `skipped`), and steps in all (`more_steps`: at
    /// least).
    pub fn progress(&self) -> (usize, usize) {
        let done = self
            .steps
            .iter()
            .filter(|s| matches!(s.state.as_str(), "completed" | "skipped"))
            .count();
        (done, self.steps.len())
    }
}

/// The snapshots of one task, from [`Client::follow`].
#[derive(Debug)]
pub struct TaskEvents {
    client: Client,
    id: Uuid,
    stream: Option<reqwest::Response>,
    frames: Frames,
    backoff: Backoff,
}

impl Client {
    /// Follows a task's snapshots as it changes. Nothing is sent until the first
    /// [`TaskEvents::next`].
    pub fn follow(&self, id: Uuid) -> TaskEvents {
        TaskEvents {
            client: self.clone(),
            id,
            stream: None,
            frames: Frames::default(),
            backoff: Backoff::new(),
        }
    }
}

impl TaskEvents {
    /// The next snapshot: the current one at first, then one per change. A dropped stream is
    /// opened again (with backoff) as long as the caller keeps asking; an answer of the API
    /// refusing it (no such task, a token refused) is returned.
    pub async fn next(&mut self) -> Result<TaskSnapshot, Error> {
        loop {
            if let Some(frame) = self.frames.next() {
                if let Some(snapshot) = snapshot(&frame) {
                    self.backoff.reset();
                    return Ok(snapshot);
                }
                continue;
            }
            let chunk = match &mut self.stream {
                Some(stream) => stream.chunk().await.map_err(Error::from),
                None => match self.open().await {
                    Ok(()) => continue,
                    Err(e) => Err(e),
                },
            };
            match chunk {
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

    async fn open(&mut self) -> Result<(), Error> {
        let url = format!("{}/v1/tasks/{}/events", self.client.base, self.id);
        let resp = self.client.http.get(url).send().await?;
        if !resp.status().is_success() {
            let refused = decode::<serde_json::Value>(resp).await;
            return Err(refused.expect_err("an answer that is not 2xx decodes as an error"));
        }
        self.stream = Some(resp);
        Ok(())
    }

    fn dropped(&mut self) {
        self.stream = None;
        self.frames.clear();
    }
}

/// A `snapshot` event's data, parsed; `None` for anything else (a keep-alive comment).
fn snapshot(frame: &crate::sse::Frame) -> Option<TaskSnapshot> {
    (frame.event == "snapshot")
        .then(|| serde_json::from_str(&frame.data).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_frame_gives_the_state_and_the_steps_done() {
        let mut frames = Frames::default();
        frames.push(b"event: snapshot\ndata: {\"task\":{\"id\":\"x\",\"state\":\"running\",\"open_steps\":1},\
            \"steps\":[{\"name\":\"a\",\"state\":\"completed\",\"attempt\":1},\
            {\"name\":\"b\",\"state\":\"enqueued\"},{\"name\":\"c\",\"state\":\"skipped\"}],\
            \"more_steps\":false,\"history\":[]}\n\n:keep-alive\n\n");
        let s = snapshot(&frames.next().unwrap()).expect("a snapshot");
        assert_eq!(s.state, "running");
        assert_eq!(s.progress(), (2, 3));
        assert!(snapshot(&frames.next().unwrap()).is_none());
    }
}
