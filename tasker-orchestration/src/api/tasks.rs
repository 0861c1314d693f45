//! Reading tasks: list, read (and wait), steps, parent results, history; and cancel.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;
use uuid::Uuid;

use tasker_shared::api::{ErrorBody, History, ParentResults, StepPage, TaskCounts, TaskPage};

use super::access::Caller;
use super::common::fetch_task_on;
use super::extract::{Path, Query};
use super::per_token::PerToken;
use super::reader::Reader;
use super::{Error, check_filter, check_limit, fetch_task, is_terminal, parse_id, parse_id_prefix};
use crate::events::Event;
use crate::executor;
use crate::shared::Shared;
use crate::store::{TaskFilter, TaskView};

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// `scheduled`, `running`, `complete`, `error` or `cancelled`.
    #[param(value_type = Option<tasker_shared::api::TaskStateName>)]
    state: Option<String>,
    namespace: Option<String>,
    /// The template's name.
    name: Option<String>,
    /// Only the tasks this task's child steps started.
    #[param(value_type = Option<Uuid>)]
    parent: Option<String>,
    /// Tasks per page: 1 to 500, 50 by default.
    limit: Option<i64>,
    /// The previous page's `next_before`: tasks created before that one.
    #[param(value_type = Option<Uuid>)]
    before: Option<String>,
    /// Only tasks created at or after this time (RFC 3339).
    #[param(value_type = Option<DateTime<Utc>>)]
    created_after: Option<String>,
    /// Only tasks created before this time (RFC 3339).
    #[param(value_type = Option<DateTime<Utc>>)]
    created_before: Option<String>,
    /// A JSON object: only tasks whose context contains it (`{"order":{"id":42}}` matches a
    /// context with `order.id` 42 among other fields; an array matches the arrays holding its
    /// items).
    context: Option<String>,
    /// Only tasks whose id begins with these hexadecimal digits (4 to 32, hyphens allowed):
    /// what a user copied from a log or a table.
    id_prefix: Option<String>,
    /// Only the task started with this idempotency key.
    idempotency_key: Option<String>,
    /// Also count the tasks of each state the filter matches (`counts` in the answer; `state`,
    /// `before` and `limit` do not narrow it).
    counts: Option<bool>,
}

/// `created_after` or `created_before` as a time, or 400 `invalid_time`.
pub(super) fn parse_time(field: &str, value: Option<&str>) -> Result<Option<DateTime<Utc>>, Error> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    Error::bad_request(
                        "invalid_time",
                        format!(
                            "`{field}` must be an RFC 3339 time such as 2026-11-27T12:00:00Z: {e}"
                        ),
                    )
                })
        })
        .transpose()
}

/// The `context` filter as a JSON object, or 400 `invalid_context_filter`; one longer than
/// `max` bytes is 400 `context_filter_too_large` before it is read.
fn parse_context_filter(value: Option<&str>, max: usize) -> Result<Option<Value>, Error> {
    let Some(text) = value else { return Ok(None) };
    if text.len() > max {
        ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name,
            "bound" => "orchestrator.max_context_filter_bytes")
        .increment(1);
        return Err(Error::bad_request(
            "context_filter_too_large",
            format!(
                "the `context` filter is {} bytes; at most {max} \
                 (orchestrator.max_context_filter_bytes)",
                text.len()
            ),
        )
        .with_details(json!({ "bound": "orchestrator.max_context_filter_bytes", "limit": max })));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(Error::bad_request(
            "invalid_context_filter",
            "`context` must be a JSON object, such as {\"order_id\": 42}",
        )),
        Err(e) => Err(Error::bad_request(
            "invalid_context_filter",
            format!("`context` is not JSON: {e}"),
        )),
    }
}

/// Tasks, newest first, a page at a time (results are left out: `GET /v1/tasks/{id}` has them);
/// a token scoped to namespaces lists the tasks of those namespaces.
#[utoipa::path(get, path = "/v1/tasks", tag = "tasks", params(ListQuery),
    responses(
        (status = 200, body = TaskPage),
        (status = 400, description = "`invalid_state`, `invalid_limit`, `invalid_id`, `invalid_time`, `invalid_context_filter`, `context_filter_too_large` (over `orchestrator.max_context_filter_bytes`), `invalid_id_prefix`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `namespace` is one the token does not cover", body = ErrorBody),
        (status = 503, description = "`query_timeout`: the query ran past `orchestrator.list_timeout_ms`", body = ErrorBody),
    ))]
pub(super) async fn list_tasks(
    State(shared): State<Shared>,
    reader: Reader,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<TaskPage>, Error> {
    check_filter("namespace", q.namespace.as_deref())?;
    if let Some(ns) = &q.namespace {
        caller.check(ns)?;
    }
    check_filter("name", q.name.as_deref())?;
    if let Some(state) = &q.state
        && tasker_shared::TaskState::parse(state).is_none()
    {
        return Err(Error::bad_request(
            "invalid_state",
            format!(
                "unknown state {state:?}; use scheduled, running, complete, error or cancelled"
            ),
        ));
    }
    let limit = check_limit(q.limit)?;
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let parent = q.parent.as_deref().map(parse_id).transpose()?;
    let created_after = parse_time("created_after", q.created_after.as_deref())?;
    let created_before = parse_time("created_before", q.created_before.as_deref())?;
    let context = parse_context_filter(
        q.context.as_deref(),
        shared.config.orchestrator.max_context_filter_bytes,
    )?;
    let filter = TaskFilter {
        state: q.state,
        namespace: q.namespace,
        namespaces: caller.namespace_regex(),
        name: q.name,
        parent,
        before,
        limit,
        created_after,
        created_before,
        context,
        id_range: q.id_prefix.as_deref().map(parse_id_prefix).transpose()?,
        idempotency_key: q.idempotency_key,
    };
    let tasks = reader.tasks(&filter).await?;
    let next_before = if tasks.len() as i64 == limit {
        tasks.last().map(|t| t.id)
    } else {
        None
    };
    let counts = match q.counts {
        Some(true) => {
            let mut counts = TaskCounts::default();
            for (state, n) in reader.task_counts(&filter).await? {
                counts.add(&state, u64::try_from(n).unwrap_or(0));
            }
            Some(counts)
        }
        _ => None,
    };
    Ok(Json(TaskPage {
        tasks,
        next_before,
        counts,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct GetQuery {
    /// Seconds to wait for the task to become terminal (at most `orchestrator.max_wait_seconds`,
    /// 300 by default): the answer comes as soon as it is, or when the wait runs out.
    wait: Option<f64>,
}

/// A task; with `wait`, a long poll that answers as soon as it is terminal.
#[utoipa::path(get, path = "/v1/tasks/{id}", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id"), GetQuery),
    responses(
        (status = 200, body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_id`, `invalid_wait` (beyond the server's cap)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token covers neither the task's namespace nor that of one of its steps", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
        (status = 429, description = "`too_many_waits`: the token holds `orchestrator.max_waits_per_token` long polls", body = ErrorBody),
    ))]
pub(super) async fn get_task(
    State(shared): State<Shared>,
    Extension(per_token): Extension<Arc<PerToken>>,
    reader: Reader,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<GetQuery>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task_or_step(&shared, id).await?;
    let max = shared.config.orchestrator.max_wait_seconds as f64;
    let wait = match q.wait {
        None => None,
        Some(w) if w.is_finite() && (0.0..=max).contains(&w) => Some(Duration::from_secs_f64(w)),
        Some(_) => {
            return Err(Error::bad_request(
                "invalid_wait",
                format!("`wait` must be between 0 and {max} seconds"),
            ));
        }
    };
    // Subscribe before reading, so a completion between the read and the wait is not missed.
    let mut events = shared.events.subscribe();
    let Some(wait) = wait else {
        return Ok(Json(fetch_task_on(&reader, id).await?));
    };
    // A long poll reads the primary: its answer is the completion it waited for.
    let task = fetch_task(&shared, id).await?;
    if is_terminal(&task) {
        return Ok(Json(task));
    }
    // Held until the answer: a token's long polls are bounded, as its requests are.
    let _waiting = per_token.wait(&caller)?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => break,
            Ok(Ok(Event::TaskFinished { task_id, .. })) if task_id == id => break,
            Ok(Ok(_)) => {}
            // Missed events: the task may have finished among them.
            Ok(Err(RecvError::Lagged(_))) => {
                if is_terminal(&fetch_task(&shared, id).await?) {
                    break;
                }
            }
            Ok(Err(RecvError::Closed)) => break,
        }
    }
    Ok(Json(fetch_task(&shared, id).await?))
}

/// A task's steps with results, errors, attempts and per-hop times, in id order, a page at a
/// time: a 100,000-step task is never one answer. A page also ends once its results and errors
/// reach `orchestrator.parent_page_bytes`: follow `next`.
#[utoipa::path(get, path = "/v1/tasks/{id}/steps", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id"), PageQuery),
    responses(
        (status = 200, body = StepPage),
        (status = 400, description = "`invalid_id`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
    ))]
pub(super) async fn task_steps(
    State(shared): State<Shared>,
    reader: Reader,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<StepPage>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    let (after, limit) = q.parse()?;
    fetch_task_on(&reader, id).await?;
    let (mut steps, next) = reader
        .steps(
            id,
            after,
            limit,
            shared.config.orchestrator.parent_page_bytes,
        )
        .await?;
    reader.flag_unserved(&mut steps).await?;
    Ok(Json(StepPage {
        task_id: id,
        steps,
        next,
    }))
}

/// `?after=&limit=` of `GET /v1/tasks/{id}/steps` and `…/steps/{step}/parent_results`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct PageQuery {
    /// The previous page's `next`.
    #[param(value_type = Option<Uuid>)]
    after: Option<String>,
    /// At most this many: 1 to 5,000, 1,000 by default.
    limit: Option<i64>,
}

impl PageQuery {
    /// The cursor and the page size (default 1,000, at most 5,000).
    fn parse(&self) -> Result<(Option<Uuid>, i64), Error> {
        let after = self.after.as_deref().map(parse_id).transpose()?;
        let limit = self.limit.unwrap_or(1_000);
        if !(1..=5_000).contains(&limit) {
            return Err(Error::bad_request(
                "invalid_query",
                "`limit` must be between 1 and 5000",
            ));
        }
        Ok((after, limit))
    }
}

/// A step's parent results, page by page: what the worker core reads for a step whose message
/// carries them by reference (a fan-out's convergence step). The page is passed through as
/// PostgreSQL wrote it.
#[utoipa::path(get, path = "/v1/tasks/{id}/steps/{step}/parent_results", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id"),
           ("step" = Uuid, Path, description = "The step's id"), PageQuery),
    responses(
        (status = 200, body = ParentResults),
        (status = 400, description = "`invalid_id`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token covers neither the task's namespace nor that of one of its steps", body = ErrorBody),
        (status = 404, description = "`step_not_found`", body = ErrorBody),
    ))]
pub(super) async fn parent_results(
    State(shared): State<Shared>,
    caller: Caller,
    Path((id, step)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ParentResults<Box<RawValue>>>, Error> {
    let (id, step) = (parse_id(&id)?, parse_id(&step)?);
    caller.check_task_or_step(&shared, id).await?;
    let (after, limit) = q.parse()?;
    let (parent_results, next) = shared
        .store
        .parent_results(
            id,
            step,
            after,
            limit,
            shared.config.orchestrator.parent_page_bytes,
        )
        .await?
        .ok_or_else(|| {
            Error::new(
                StatusCode::NOT_FOUND,
                "step_not_found",
                format!("task {id} has no step {step}"),
            )
        })?;
    Ok(Json(ParentResults {
        task_id: id,
        step_id: step,
        parent_results,
        next,
    }))
}

/// A task's transitions and its steps', oldest first, with who made each repair and why.
#[utoipa::path(get, path = "/v1/tasks/{id}/history", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id")),
    responses(
        (status = 200, body = History),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
    ))]
pub(super) async fn task_history(
    State(shared): State<Shared>,
    reader: Reader,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<History>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    fetch_task_on(&reader, id).await?;
    let transitions = reader.history(id).await?;
    Ok(Json(History {
        task_id: id,
        transitions,
    }))
}

/// Cancels a running task: its open steps are cancelled.
#[utoipa::path(post, path = "/v1/tasks/{id}/cancel", tag = "tasks",
    params(("id" = Uuid, Path, description = "The task's id")),
    responses(
        (status = 200, description = "The task, cancelled", body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
        (status = 409, description = "`task_not_running`: it already ended", body = ErrorBody),
    ))]
pub(super) async fn cancel_task(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    match shared.store.cancel_task(id).await? {
        None => Err(Error::not_found("task_not_found", format!("no task {id}"))),
        Some((_, Some(effects))) => {
            executor::execute(&shared, effects).await;
            Ok(Json(fetch_task(&shared, id).await?))
        }
        Some((state, None)) => Err(Error::new(
            StatusCode::CONFLICT,
            "task_not_running",
            format!("task {id} is already {state}"),
        )),
    }
}
