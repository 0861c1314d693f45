//! A task followed live: `GET /v1/tasks/{id}/events` pushes a snapshot of the task and its
//! steps whenever it changes (what the dashboard follows). [`Client::follow`] reads them, and
//! opens the stream again, with backoff, when the connection drops.

use serde::Deserialize;
use uuid::Uuid;

use crate::client::Client;
use crate::error::Error;
use crate::sse::Reconnecting;

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
    events: Reconnecting,
}

impl Client {
    /// Follows a task's snapshots as it changes. Nothing is sent until the first
    /// [`TaskEvents::next`].
    pub fn follow(&self, id: Uuid) -> TaskEvents {
        TaskEvents {
            client: self.clone(),
            id,
            events: Reconnecting::default(),
        }
    }
}

impl TaskEvents {
    /// The next snapshot: the current one at first, then one per change. A dropped stream is
    /// opened again (with backoff) as long as the caller keeps asking; an answer of the API
    /// refusing it (no such task, a token refused) is returned.
    pub async fn next(&mut self) -> Result<TaskSnapshot, Error> {
        let url = format!("{}/v1/tasks/{}/events", self.client.base, self.id);
        loop {
            let frame = self.events.next(|| self.client.http.get(&url)).await?;
            if let Some(snapshot) = snapshot(&frame) {
                self.events.arrived();
                return Ok(snapshot);
            }
        }
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
        let mut frames = crate::sse::Frames::default();
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
