//! Events through the API: send one or a batch (each stored and matched against the triggers
//! of its namespace's templates in one transaction: `event_starts`), list them, show one.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use uuid::Uuid;

use tasker_shared::api::{
    BatchStatus, ErrorBody, Event, EventItem, EventPage, EventsSent, SendEvent, SendEvents,
};
use tasker_shared::time::is_signal_name;

use super::access::Caller;
use super::event_starts::{Checked, record};
use super::extract::{Path, Query};
use super::{Error, check_limit, parse_id, request_body};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::Stored;

/// Sends an event to a namespace. It is stored, and every template of that namespace whose
/// newest version has a trigger (`on:`) matching it starts a task, in the same transaction.
/// An event no trigger matches is stored all the same. Sending the same `id` again answers
/// the stored event and starts nothing.
#[utoipa::path(post, path = "/v1/events", operation_id = "send_event", tag = "events",
    request_body = SendEvent,
    responses(
        (status = 201, description = "Stored, with the tasks it started (header `location`)", body = Event),
        (status = 200, description = "Its `id` was sent before: the stored event", body = Event),
        (status = 400, description = "`invalid_json`, `invalid_event_name`, `invalid_event_data`, `invalid_event_key`, `invalid_event_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
    ))]
pub(super) async fn send(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let req: SendEvent = serde_json::from_slice(&body)
        .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))?;
    let checked = check(&shared, &caller, req).inspect_err(|_| refused_metric())?;
    caller.audit().target(
        "event",
        json!({ "namespace": checked.namespace, "name": checked.name }),
    );
    answer(record(&shared, &caller, vec![checked]).await?)
}

/// The answer to one event sent: 201 for a new one, 200 for its `id` sent before, with its
/// `location`.
pub(super) fn answer(stored: Vec<Stored>) -> Result<Response, Error> {
    let (status, event) = match stored.into_iter().next() {
        Some(Stored::Created(e)) => (StatusCode::CREATED, e),
        Some(Stored::Existing(e)) => (StatusCode::OK, e),
        None => {
            return Err(Error::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the event was not answered",
            ));
        }
    };
    let location = format!("/v1/events/{}", event.id);
    Ok((status, [("location", location)], Json(event)).into_response())
}

/// Sends many events in one request and one transaction: each item is what `POST /v1/events`
/// takes and gets its own result, in order — `created`, `existing` (its `id` was sent before)
/// or `refused` (nothing stored for it; the others are).
#[utoipa::path(post, path = "/v1/events:batch", operation_id = "send_events", tag = "events",
    request_body = SendEvents,
    responses(
        (status = 200, description = "Each event's result, in request order", body = EventsSent),
        (status = 400, description = "`invalid_json` (not `{\"events\": [...]}`), `empty_batch`", body = ErrorBody),
        (status = 413, description = "`batch_too_large` (more events than `orchestrator.max_batch_tasks`), `body_too_large` (over `orchestrator.max_batch_body_bytes`)", body = ErrorBody),
    ))]
pub(super) async fn send_batch(
    State(shared): State<Shared>,
    caller: Caller,
    body: axum::body::Body,
) -> Result<Json<EventsSent>, Error> {
    let o = &shared.config.orchestrator;
    let body = super::task_batch::batch_body(o, body).await?;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Items<'a> {
        #[serde(borrow)]
        events: Vec<&'a RawValue>,
    }
    let items: Items = serde_json::from_slice(&body).map_err(|e| {
        Error::bad_request(
            "invalid_json",
            format!("the body must be {{\"events\": [event, ...]}}: {e}"),
        )
    })?;
    if items.events.is_empty() {
        return Err(Error::bad_request("empty_batch", "`events` holds no event"));
    }
    if items.events.len() > o.max_batch_tasks {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!(
                "{} events in one request; the limit is {} (orchestrator.max_batch_tasks)",
                items.events.len(),
                o.max_batch_tasks
            ),
        )
        .with_details(json!({ "events": items.events.len(), "limit": o.max_batch_tasks })));
    }
    let mut results: Vec<Option<EventItem>> = vec![None; items.events.len()];
    let (mut indexes, mut checked) = (Vec::new(), Vec::new());
    for (index, raw) in items.events.iter().enumerate() {
        let item = serde_json::from_str::<SendEvent>(raw.get())
            .map_err(|e| Error::bad_request("invalid_json", format!("invalid event: {e}")))
            .and_then(|req| check(&shared, &caller, req));
        match item {
            Ok(c) => {
                indexes.push(index);
                checked.push(c);
            }
            Err(e) => {
                refused_metric();
                results[index] = Some(EventItem {
                    index,
                    status: BatchStatus::Refused,
                    event_id: None,
                    task_ids: Vec::new(),
                    error: Some(e.detail()),
                });
            }
        }
    }
    let stored = if checked.is_empty() {
        Vec::new()
    } else {
        record(&shared, &caller, checked).await?
    };
    for (index, s) in indexes.into_iter().zip(stored) {
        let (status, event) = match s {
            Stored::Created(e) => (BatchStatus::Created, e),
            Stored::Existing(e) => (BatchStatus::Existing, e),
        };
        results[index] = Some(EventItem {
            index,
            status,
            event_id: Some(event.id),
            task_ids: event.started.iter().filter_map(|s| s.task_id).collect(),
            error: None,
        });
    }
    let results: Vec<EventItem> = results.into_iter().flatten().collect();
    let count = |s: BatchStatus| results.iter().filter(|r| r.status == s).count();
    let sent = EventsSent {
        created: count(BatchStatus::Created),
        existing: count(BatchStatus::Existing),
        refused: count(BatchStatus::Refused),
        results,
    };
    caller.audit().target(
        "events",
        json!({ "created": sent.created, "existing": sent.existing, "refused": sent.refused }),
    );
    Ok(Json(sent))
}

fn refused_metric() {
    ::metrics::counter!(m::EVENTS_RECEIVED.name, "outcome" => "refused").increment(1);
}

/// An event request's checks: the caller's namespace, the name, the data, the key, the id.
pub(super) fn check(shared: &Shared, caller: &Caller, req: SendEvent) -> Result<Checked, Error> {
    caller.check(&req.namespace)?;
    if !is_signal_name(&req.name) {
        return Err(Error::bad_request(
            "invalid_event_name",
            format!(
                "an event name is 1 to 64 ASCII letters, digits, `_`, `-` or `.` (got {:?})",
                req.name
            ),
        ));
    }
    let data = req.data.unwrap_or_else(|| json!({}));
    if !data.is_object() {
        return Err(Error::bad_request(
            "invalid_event_data",
            "`data` must be a JSON object",
        ));
    }
    let limit = shared.config.orchestrator.max_context_bytes;
    let size = serde_json::to_vec(&data).map_or(usize::MAX, |b| b.len());
    if size > limit {
        return Err(Error::bad_request(
            "invalid_event_data",
            format!(
                "`data` is {size} bytes of JSON; the limit is {limit} (orchestrator.max_context_bytes)"
            ),
        ));
    }
    if let Err(problem) =
        tasker_shared::json_check::check(&data, tasker_shared::json_check::MAX_DEPTH)
    {
        return Err(Error::bad_request(
            "invalid_event_data",
            format!("`data` {problem}"),
        ));
    }
    for (field, code, value) in [
        ("key", "invalid_event_key", &req.key),
        ("id", "invalid_event_id", &req.id),
    ] {
        if let Some(v) = value
            && (v.is_empty() || v.len() > 255 || v.chars().any(char::is_control))
        {
            return Err(Error::bad_request(
                code,
                format!("`{field}` must be 1 to 255 characters, none of them control characters"),
            ));
        }
    }
    Ok(Checked {
        id: Uuid::now_v7(),
        namespace: req.namespace,
        name: req.name,
        key: req.key,
        sender_id: req.id,
        data,
    })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only this namespace's events.
    namespace: Option<String>,
    /// Only events of this name.
    name: Option<String>,
    /// The previous page's `next_before`.
    #[param(value_type = Option<Uuid>)]
    before: Option<String>,
    /// 1 to 500, 50 by default.
    limit: Option<i64>,
}

/// `GET /v1/events/log`: events newest first, with what each started; a token scoped to
/// namespaces lists the events of those namespaces. (`GET /v1/events` is the live stream of
/// task snapshots.)
#[utoipa::path(get, path = "/v1/events/log", operation_id = "list_events", tag = "events", params(ListQuery),
    responses(
        (status = 200, body = EventPage),
        (status = 400, description = "`invalid_limit`, `invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover `namespace`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<EventPage>, Error> {
    let limit = check_limit(q.limit)?;
    if let Some(ns) = &q.namespace {
        caller.check(ns)?;
    }
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let events = shared
        .store
        .events(
            q.namespace.as_deref(),
            caller.namespace_regex().as_deref(),
            q.name.as_deref(),
            before,
            limit,
        )
        .await?;
    let next_before = (events.len() as i64 == limit)
        .then(|| events.last().map(|e| e.id))
        .flatten();
    Ok(Json(EventPage {
        events,
        next_before,
    }))
}

/// `GET /v1/events/{id}`: an event with what it started.
#[utoipa::path(get, path = "/v1/events/{id}", operation_id = "get_event", tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 200, body = Event),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the event's namespace", body = ErrorBody),
        (status = 404, description = "`event_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Event>, Error> {
    let id = parse_id(&id)?;
    let event = shared
        .store
        .event(id)
        .await?
        .ok_or_else(|| Error::not_found("event_not_found", format!("no event {id}")))?;
    caller.check(&event.namespace)?;
    Ok(Json(event))
}
