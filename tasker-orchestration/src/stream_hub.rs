//! The hub every stream reader of an orchestrator shares (`GET /v1/tasks/{id}/stream`): per task
//! read here, one broadcast of its chunks, each serialized once, and one signal of how far its
//! kept stream reaches and whether the task ended. Chunks this orchestrator keeps reach it
//! before they are committed; chunks another orchestrator kept are read once per task when its
//! notification says so (one upstream per task, however many readers). Readers are capped in
//! all and per token (`orchestrator.max_event_streams`, `max_event_streams_per_token`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use tasker_shared::api::StreamChunk;

use crate::live::Full;
use crate::store::{Children, KeptChunk, Store};

/// Batches a lagging reader may fall behind by before it reads from the database instead.
const LIVE_BATCHES: usize = 256;

/// Chunks read per statement when following another orchestrator's writes.
const FOLLOW_PAGE: i64 = 1_000;

/// A chunk as readers send it.
#[derive(Debug)]
pub struct Out {
    pub offset: i64,
    pub topic: Arc<str>,
    /// A copy of a child task's chunk: the child's namespace (each reader says whether it
    /// merges its children's chunks, and which its token covers).
    pub namespace: Option<Arc<str>>,
    /// Its JSON, made once for every reader.
    pub json: Arc<str>,
}

/// Chunks handed to readers together, in position order.
pub type Batch = Arc<Vec<Out>>;

/// How far a task's kept stream reaches, as last told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signal {
    /// The position after the last committed chunk.
    pub kept: i64,
    /// The task ended.
    pub finished: bool,
    /// Bumped when a reader cannot trust what it holds (a notification may have been missed):
    /// read from the database again.
    pub resync: u64,
}

#[derive(Debug)]
struct Entry {
    live: broadcast::Sender<Batch>,
    signal: watch::Sender<Signal>,
    /// One past the highest position handed to `live` (`None` before the first: what was kept
    /// before a reader came, it reads from the database itself).
    live_next: Option<i64>,
    /// Kept (as another orchestrator's notification said) and not yet handed to `live`: read
    /// once for every reader by [`StreamHub::follow`], then signalled.
    target: i64,
    following: bool,
    readers: usize,
}

#[derive(Debug, Default)]
struct State {
    tasks: HashMap<Uuid, Entry>,
    open: usize,
    by_token: HashMap<String, usize>,
}

/// The hub; see the module's documentation.
#[derive(Debug)]
pub struct StreamHub {
    state: Mutex<State>,
    store: Store,
    max_total: usize,
    max_per_token: usize,
}

/// One reader's place in the hub.
#[derive(Debug)]
pub struct Reader {
    hub: Arc<StreamHub>,
    task: Uuid,
    token: Option<String>,
    pub live: broadcast::Receiver<Batch>,
    pub signal: watch::Receiver<Signal>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut state = self.hub.lock();
        state.open -= 1;
        if let Some(token) = &self.token
            && let Some(n) = state.by_token.get_mut(token)
        {
            *n -= 1;
            if *n == 0 {
                state.by_token.remove(token);
            }
        }
        if let Some(e) = state.tasks.get_mut(&self.task) {
            e.readers -= 1;
            if e.readers == 0 {
                state.tasks.remove(&self.task);
            }
        }
    }
}

impl StreamHub {
    pub fn new(store: Store, max_total: usize, max_per_token: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::default(),
            store,
            max_total,
            max_per_token,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A reader of `task`'s stream, within the caps.
    pub fn subscribe(self: &Arc<Self>, task: Uuid, token: Option<&str>) -> Result<Reader, Full> {
        let mut state = self.lock();
        let of_token = token.map_or(0, |t| state.by_token.get(t).copied().unwrap_or(0));
        if state.open >= self.max_total || of_token >= self.max_per_token {
            return Err(Full {
                message: format!(
                    "this orchestrator serves at most {} streams, {} per token; all are open",
                    self.max_total, self.max_per_token
                ),
                max_total: self.max_total,
                max_per_token: self.max_per_token,
            });
        }
        state.open += 1;
        if let Some(t) = token {
            *state.by_token.entry(t.to_owned()).or_default() += 1;
        }
        let entry = state.tasks.entry(task).or_insert_with(|| Entry {
            live: broadcast::channel(LIVE_BATCHES).0,
            signal: watch::Sender::new(Signal::default()),
            live_next: None,
            target: 0,
            following: false,
            readers: 0,
        });
        entry.readers += 1;
        Ok(Reader {
            task,
            token: token.map(str::to_owned),
            live: entry.live.subscribe(),
            signal: entry.signal.subscribe(),
            hub: self.clone(),
        })
    }

    /// Chunks about to be committed (by this orchestrator): to the readers of their tasks.
    pub fn offer(&self, chunks: &[KeptChunk]) {
        let mut state = self.lock();
        if state.tasks.is_empty() {
            return;
        }
        let mut by_task: HashMap<Uuid, Vec<Out>> = HashMap::new();
        for k in chunks {
            if state.tasks.contains_key(&k.task) {
                by_task
                    .entry(k.task)
                    .or_default()
                    .push(out(&k.chunk, k.namespace.clone()));
            }
        }
        for (task, outs) in by_task {
            if let Some(e) = state.tasks.get_mut(&task) {
                hand_out(e, outs);
            }
        }
    }

    /// `task`'s stream is kept up to `next` (committed here, or by another orchestrator, as its
    /// notification says). Chunks already handed out are signalled at once; others are read
    /// once for all readers, handed out, then signalled, so a reader woken holds them.
    pub fn kept(self: &Arc<Self>, task: Uuid, next: i64) {
        let mut state = self.lock();
        let Some(e) = state.tasks.get_mut(&task) else {
            return;
        };
        if e.live_next.is_none_or(|n| n >= next) {
            e.live_next.get_or_insert(next);
            signal_kept(e, next);
            return;
        }
        e.target = e.target.max(next);
        if !e.following {
            e.following = true;
            let hub = self.clone();
            tokio::spawn(async move { hub.follow(task).await });
        }
    }

    /// Reads what was kept of `task` beyond what was handed out, until caught up.
    async fn follow(self: Arc<Self>, task: Uuid) {
        loop {
            let (from, to) = {
                let mut state = self.lock();
                let Some(e) = state.tasks.get_mut(&task) else {
                    return;
                };
                let from = e.live_next.unwrap_or(e.target);
                if from >= e.target {
                    e.following = false;
                    let target = e.target;
                    signal_kept(e, target);
                    return;
                }
                (from, e.target)
            };
            let page = self
                .store
                .stream_page(
                    task,
                    from,
                    None,
                    FOLLOW_PAGE.min(to - from),
                    Children::Merged(None),
                )
                .await;
            let mut state = self.lock();
            let Some(e) = state.tasks.get_mut(&task) else {
                return;
            };
            match page {
                Ok(read) if !read.chunks.is_empty() => {
                    let outs = read
                        .chunks
                        .into_iter()
                        .filter(|r| r.chunk.offset >= from)
                        .map(|r| out(&r.chunk, r.namespace))
                        .collect();
                    hand_out(e, outs);
                }
                other => {
                    if let Err(err) = other {
                        tracing::warn!(%task, error = %err,
                            "reading a task's stream for its readers failed; they read it themselves");
                    }
                    // Not readable (yet): the readers read from the database themselves.
                    e.following = false;
                    let target = e.target;
                    signal_kept(e, target);
                    e.signal.send_modify(|s| s.resync += 1);
                    return;
                }
            }
        }
    }

    /// `task` ended: its readers finish once its stream is complete.
    pub fn finished(&self, task: Uuid) {
        if let Some(e) = self.lock().tasks.get(&task) {
            e.signal
                .send_if_modified(|s| !std::mem::replace(&mut s.finished, true));
        }
    }

    /// Every reader reads from the database again (notifications may have been missed).
    pub fn resync_all(&self) {
        for e in self.lock().tasks.values() {
            e.signal.send_modify(|s| s.resync += 1);
        }
    }

    /// Readers open now.
    pub fn open(&self) -> usize {
        self.lock().open
    }
}

fn out(c: &StreamChunk, namespace: Option<Arc<str>>) -> Out {
    Out {
        offset: c.offset,
        topic: c.topic.as_str().into(),
        namespace,
        json: serde_json::to_string(c)
            .expect("a stream chunk always serializes")
            .into(),
    }
}

fn signal_kept(e: &Entry, next: i64) {
    e.signal.send_if_modified(|s| {
        let moved = next > s.kept;
        s.kept = s.kept.max(next);
        moved
    });
}

fn hand_out(e: &mut Entry, outs: Vec<Out>) {
    if let Some(last) = outs.last() {
        e.live_next = Some(
            e.live_next
                .map_or(last.offset + 1, |n| n.max(last.offset + 1)),
        );
        let _ = e.live.send(Arc::new(outs));
    }
}
