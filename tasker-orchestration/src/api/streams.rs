//! `GET /v1/tasks/{id}/stream`: what a task's steps emitted (`ctx.emit`, `ctx.emit_text`), as a
//! page of JSON or, asked with `Accept: text/event-stream`, as Server-Sent Events that follow
//! the stream live and end once it is complete. Each chunk's event id is its offset, so a reader
//! that comes back with `Last-Event-ID` goes on with no gap and no duplicate.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use uuid::Uuid;

use tasker_shared::api::{ErrorBody, StreamPage};
use tasker_shared::stream::topic_problem;

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, fetch_task, parse_id};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{Children, ReadChunk, StreamRead};
use crate::stream_hub::{Out, Reader};

/// Chunks a page holds by default, and at most.
const PAGE_DEFAULT: i64 = 500;
const PAGE_MAX: i64 = 1_000;

/// How often a reader of an ended task looks again while one of its attempts may still be
/// streaming (its end not kept yet).
const ENDED_LOOK_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct StreamQuery {
    /// The first offset wanted (0 by default). As events, `Last-Event-ID` (the last offset
    /// received) wins over it.
    from: Option<i64>,
    /// Only the chunks of this topic (offsets still count every chunk).
    topic: Option<String>,
    /// As JSON: 1 to 1,000 chunks, 500 by default.
    limit: Option<i64>,
    /// With the chunks of the task's child tasks (`child:` steps, at any depth) merged in, at
    /// offsets of this stream, of the namespaces the token covers (false by default).
    children: Option<bool>,
}

/// A task's stream: a page of chunks as JSON (`next`: where to read from next; `complete`:
/// nothing will follow), or with `Accept: text/event-stream`, `chunk` events (id: the offset;
/// data: the chunk) from `from` on, live, then an `end` event `{next}` once the task has ended
/// and every step attempt's stream with it.
#[utoipa::path(get, path = "/v1/tasks/{id}/stream", tag = "tasks", operation_id = "read_task_stream",
    params(("id" = Uuid, Path, description = "The task's id"), StreamQuery,
        ("Last-Event-ID" = Option<i64>, Header, description = "As events: the offset last received; the stream goes on after it")),
    responses(
        (status = 200, description = "A page of the stream, or (`Accept: text/event-stream`) `chunk` events then an `end` event",
            content((StreamPage = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "`invalid_id`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
        (status = 410, description = "`task_purged`: retention removed the task and its stream", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: this orchestrator's, or this token's, streams are all open", body = ErrorBody),
    ))]
pub(super) async fn read_task_stream(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    if let Err(e) = fetch_task(&shared, id).await {
        return Err(match e.status() {
            StatusCode::NOT_FOUND => super::retention::purged(&shared, id).await.unwrap_or(e),
            _ => e,
        });
    }
    let invalid = |m: String| Error::bad_request("invalid_query", m);
    let from = q.from.unwrap_or(0);
    if from < 0 {
        return Err(invalid("`from` is an offset: 0 or more".into()));
    }
    if let Some(p) = q.topic.as_deref().and_then(topic_problem) {
        return Err(invalid(format!("`topic`: {p}")));
    }
    let limit = q.limit.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&limit) {
        return Err(invalid(format!("`limit` is 1 to {PAGE_MAX}")));
    }
    let children = q.children.unwrap_or(false).then(|| caller.clone());
    let permit = children.as_ref().and_then(Caller::namespace_regex);
    if !wants_events(&headers) {
        let merged = family(children.is_some(), permit.as_deref());
        let read = shared
            .store
            .stream_page(id, from, q.topic.as_deref(), limit, merged)
            .await?;
        let page = StreamPage {
            task_id: id,
            chunks: read.chunks.into_iter().map(|r| r.chunk).collect(),
            next: read.next,
            complete: read.complete,
        };
        return Ok(Json(page).into_response());
    }
    let from = match last_event_id(&headers) {
        Some(Ok(last)) => last + 1,
        Some(Err(())) => {
            return Err(invalid(
                "`Last-Event-ID` is the offset last received".into(),
            ));
        }
        None => from,
    };
    let token = caller.principal().map(|p| p.name.as_str());
    let reader = shared.streams.subscribe(id, token)?;
    let (tx, mut rx) = mpsc::channel(64);
    let pump = Pump {
        shared: shared.clone(),
        task: id,
        topic: q.topic.map(Arc::from),
        children,
        permit,
        next: from,
        pending: BTreeMap::new(),
        tx,
    };
    tokio::spawn(pump.run(reader));
    let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Which chunks a read holds besides the task's own: none, or its children's of the namespaces
/// `permit` matches (`None`: every one).
fn family(merged: bool, permit: Option<&str>) -> Children<'_> {
    if merged {
        Children::Merged(permit)
    } else {
        Children::Left
    }
}

fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

fn last_event_id(headers: &HeaderMap) -> Option<Result<i64, ()>> {
    let v = headers.get("last-event-id")?;
    Some(
        v.to_str()
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .ok_or(()),
    )
}

/// One reader's events: from the database up to what it holds, then live, back to the
/// database whenever it lacks a chunk (it came before the reader, or the reader lagged).
struct Pump {
    shared: Shared,
    task: Uuid,
    topic: Option<Arc<str>>,
    /// Merging the task's children's chunks: the caller (whose token must cover each child's
    /// namespace), and as a PostgreSQL regular expression.
    children: Option<Caller>,
    permit: Option<String>,
    /// The offset to send next.
    next: i64,
    /// Chunks received live beyond `next`, by offset: the JSON to send, `None` if this reader
    /// leaves it out (another topic, a child's not merged).
    pending: BTreeMap<i64, Option<Arc<str>>>,
    tx: mpsc::Sender<Result<SseEvent, Infallible>>,
}

/// Why a reader's live phase ended.
enum Wake {
    /// Read from the database.
    Read,
    /// The reader left, or the orchestrator stops.
    Gone,
}

impl Pump {
    async fn run(mut self, mut reader: Reader) {
        metrics::gauge!(m::STREAM_READERS.name).increment(1.0);
        self.serve(&mut reader).await;
        metrics::gauge!(m::STREAM_READERS.name).decrement(1.0);
    }

    async fn serve(&mut self, reader: &mut Reader) {
        loop {
            let page = self
                .shared
                .store
                .stream_page(
                    self.task,
                    self.next,
                    self.topic.as_deref(),
                    PAGE_MAX,
                    family(self.children.is_some(), self.permit.as_deref()),
                )
                .await;
            let StreamRead {
                chunks,
                next,
                complete,
                task_ended,
            } = match page {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(task = %self.task, error = %e, "reading a task's stream failed; trying again");
                    if matches!(self.wait(reader, Some(ENDED_LOOK_EVERY)).await, Wake::Gone) {
                        return;
                    }
                    continue;
                }
            };
            let full = chunks.len() as i64 == PAGE_MAX;
            for ReadChunk { chunk: c, .. } in chunks {
                let json = serde_json::to_string(&c).expect("a stream chunk always serializes");
                if !self.send(c.offset, &json).await {
                    return;
                }
            }
            self.next = next;
            self.pending = self.pending.split_off(&next);
            if complete {
                let end = SseEvent::default()
                    .event("end")
                    .data(json!({ "next": next }).to_string());
                let _ = self.tx.send(Ok(end)).await;
                return;
            }
            if full {
                continue;
            }
            // An ended task's stream completes without a word from the hub (an attempt whose
            // worker died never sends its end; the task may have ended before this reader came).
            let ended = task_ended || reader.signal.borrow().finished;
            let look = ended.then_some(ENDED_LOOK_EVERY);
            if matches!(self.wait(reader, look).await, Wake::Gone) {
                return;
            }
        }
    }

    /// Sends what arrives live, in order, until the reader must read from the database.
    async fn wait(&mut self, reader: &mut Reader, look: Option<Duration>) -> Wake {
        let mut resync = reader.signal.borrow_and_update().resync;
        let look = tokio::time::sleep(look.unwrap_or(Duration::from_secs(86_400)));
        tokio::pin!(look);
        loop {
            while let Some(json) = self.pending.remove(&self.next) {
                let offset = self.next;
                self.next += 1;
                if let Some(json) = json
                    && !self.send(offset, &json).await
                {
                    return Wake::Gone;
                }
            }
            tokio::select! {
                () = self.shared.shutdown.cancelled() => return Wake::Gone,
                () = self.tx.closed() => return Wake::Gone,
                () = &mut look => return Wake::Read,
                batch = reader.live.recv() => match batch {
                    Ok(batch) => {
                        for o in batch.iter().filter(|o| o.offset >= self.next) {
                            let wanted = self.wants(o).then(|| o.json.clone());
                            self.pending.insert(o.offset, wanted);
                        }
                    }
                    Err(RecvError::Lagged(_)) => return Wake::Read,
                    Err(RecvError::Closed) => return Wake::Gone,
                },
                changed = reader.signal.changed() => {
                    if changed.is_err() {
                        return Wake::Gone;
                    }
                    let s = *reader.signal.borrow_and_update();
                    let lacking = s.kept > self.next && !self.pending.contains_key(&self.next);
                    if s.finished || s.resync != resync || lacking {
                        return Wake::Read;
                    }
                    resync = s.resync;
                }
            }
        }
    }

    /// Whether this reader sends a chunk received live: of its topic, and its task's own or a
    /// child's it merges and may read.
    fn wants(&self, o: &Out) -> bool {
        self.topic.as_ref().is_none_or(|t| *t == o.topic)
            && o.namespace
                .as_deref()
                .is_none_or(|ns| self.children.as_ref().is_some_and(|c| c.covers(ns)))
    }

    /// Sends chunk `offset`; `false` once the reader has left.
    async fn send(&self, offset: i64, json: &str) -> bool {
        let event = SseEvent::default()
            .id(offset.to_string())
            .event("chunk")
            .data(json);
        self.tx.send(Ok(event)).await.is_ok()
    }
}
