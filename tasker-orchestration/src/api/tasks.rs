//! Task routes: create (with its checks), list, read (and wait), steps, parent results,
//! history, cancel.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;
use uuid::Uuid;

use tasker_shared::api::{
    BatchCreated, BatchItem, BatchStatus, CreateTask, CreateTasks, ErrorBody, History,
    ParentResults, StepPage, TaskPage,
};
use tasker_shared::json_check;

use super::access::Caller;
use super::extract::{Path, Query};
use super::per_token::PerToken;
use super::{
    Error, check_filter, check_limit, fetch_task, is_terminal, parse_id, request_body,
    unknown_template,
};
use crate::events::Event;
use crate::executor;
use crate::shared::Shared;
use crate::store::{CreateBatch, NewTask, TaskFilter, TaskView};

/// Creates a task from a registered template, or returns the task an idempotency key already
/// created.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", request_body = CreateTask,
    responses(
        (status = 201, description = "Created (header `location`: its URL)", body = tasker_shared::api::Task),
        (status = 200, description = "The task this idempotency key created", body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_json`, `invalid_context`, `invalid_idempotency_key`, `invalid_run_at` (more than a year ahead, or with `delay`), `invalid_delay`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
        (status = 409, description = "`idempotency_key_reused`: the key created a task from another template or context", body = ErrorBody),
        (status = 413, description = "`body_too_large`, `context_too_large`", body = ErrorBody),
        (status = 422, description = "`context_schema_violation` (details: the problems), `unknown_child_template` (a child step names a template that is not registered), `concurrency_key_missing` / `rate_limit_key_missing` (a limit's key pointer finds no string, number or boolean in the context), `concurrency_key_too_long` / `rate_limit_key_too_long` (its value is over 128 bytes)", body = ErrorBody),
    ))]
pub(super) async fn create_task(
    State(shared): State<Shared>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let req: CreateTask = serde_json::from_slice(&body).map_err(|e| refused_body(&body, e))?;
    let Checked {
        entry,
        context,
        idempotency_key,
        run_at,
        children,
        priority,
    } = check_request(&shared, &caller, req, body.len()).await?;
    caller
        .audit()
        .target("template", entry.loaded.template.key());
    // The task's trace (tracing on): a child of the caller's, if the request carries one.
    let span = tasker_telemetry::Span::start(
        "tasker.task.create",
        headers.get("traceparent").and_then(|v| v.to_str().ok()),
        vec![
            tasker_telemetry::attr("tasker.namespace", entry.loaded.template.namespace.clone()),
            tasker_telemetry::attr("tasker.template", entry.loaded.template.key()),
        ],
    );
    let mut created = shared
        .store
        .create_task(NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            context: context.clone(),
            idempotency_key,
            run_at,
            children,
            parent: None,
            priority,
            token_id: caller.token_id(),
        })
        .await?;
    caller.audit().task(created.task_id);
    if let Some(span) = &span
        && created.created
    {
        trace(&shared, span, &mut created).await?;
    }
    if !created.created && (created.template_id != entry.id || created.context != context) {
        return Err(key_reused(created.task_id));
    }
    let status = if created.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    executor::execute(&shared, created.effects).await;
    let task = fetch_task(&shared, created.task_id).await?;
    let location = format!("/v1/tasks/{}", created.task_id);
    Ok((status, [("location", location)], Json(task)).into_response())
}

/// A creation request that passed every check: what creating its task takes.
struct Checked {
    entry: std::sync::Arc<crate::catalog::Entry>,
    context: Value,
    idempotency_key: Option<String>,
    run_at: Option<DateTime<Utc>>,
    children: Vec<Option<Value>>,
    priority: tasker_shared::flow::Priority,
}

/// Checks a creation request (one, or an item of a batch whose JSON is `body_len` bytes): the
/// caller's namespaces, the context, the key, the start time, the template and its schema.
async fn check_request(
    shared: &Shared,
    caller: &Caller,
    mut req: CreateTask,
    body_len: usize,
) -> Result<Checked, Error> {
    caller.check(&req.namespace)?;
    let context = checked_context(shared, body_len, req.context.take())?;
    check_idempotency_key(req.idempotency_key.as_deref())?;
    let run_at = start_time(&req)?;
    let entry = shared
        .catalog
        .get(&req.namespace, &req.name, req.version.as_deref())
        .await?
        .ok_or_else(|| unknown_template(&req.namespace, &req.name, req.version.as_deref()))?;
    if let Err(problems) = entry.loaded.check_context(&context) {
        return Err(Error::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "context_schema_violation",
            format!(
                "context does not match the schema of {}: {}",
                entry.loaded.template.key(),
                problems.join("; ")
            ),
        )
        .with_details(json!(problems)));
    }
    let children = pin_children(shared, &entry.loaded).await?;
    caller.check_template(shared, &entry.loaded).await?;
    let priority = req
        .priority
        .or(entry.loaded.template.priority)
        .unwrap_or_default();
    Ok(Checked {
        entry,
        context,
        idempotency_key: req.idempotency_key,
        run_at,
        children,
        priority,
    })
}

fn key_reused(task: Uuid) -> Error {
    Error::new(
        StatusCode::CONFLICT,
        "idempotency_key_reused",
        format!(
            "the idempotency key was used for task {task} with a different template or context"
        ),
    )
}

/// Creates many tasks in one request and one transaction: each item is what `POST /v1/tasks`
/// takes and gets its own result, in order — `created`, `existing` (its idempotency key's
/// task, same template and context) or `refused` with the error `POST /v1/tasks` would answer
/// (nothing is created for it; the others are). A repeated request creates nothing new.
#[utoipa::path(post, path = "/v1/tasks:batch", tag = "tasks", operation_id = "create_tasks",
    request_body = CreateTasks,
    responses(
        (status = 200, description = "Each item's result, in request order", body = BatchCreated),
        (status = 400, description = "`invalid_json` (not `{\"tasks\": [...]}`), `empty_batch`, `duplicate_idempotency_key` (two items share a key; details: the key and both indexes)", body = ErrorBody),
        (status = 413, description = "`batch_too_large` (more items than `orchestrator.max_batch_tasks`, 10,000 by default), `body_too_large` (over `orchestrator.max_batch_body_bytes`)", body = ErrorBody),
    ))]
pub(super) async fn create_tasks(
    State(shared): State<Shared>,
    caller: Caller,
    body: axum::body::Body,
) -> Result<Json<BatchCreated>, Error> {
    let o = &shared.config.orchestrator;
    let body = axum::body::to_bytes(body, o.max_batch_body_bytes)
        .await
        .map_err(|_| {
            Error::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!(
                    "request body exceeds {} bytes (orchestrator.max_batch_body_bytes)",
                    o.max_batch_body_bytes
                ),
            )
        })?;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Items<'a> {
        #[serde(borrow)]
        tasks: Vec<&'a RawValue>,
    }
    let items: Items = serde_json::from_slice(&body).map_err(|e| {
        Error::bad_request(
            "invalid_json",
            format!("the body must be {{\"tasks\": [task, ...]}}: {e}"),
        )
    })?;
    if items.tasks.is_empty() {
        return Err(Error::bad_request("empty_batch", "`tasks` holds no task"));
    }
    if items.tasks.len() > o.max_batch_tasks {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!(
                "{} tasks in one request; the limit is {} (orchestrator.max_batch_tasks)",
                items.tasks.len(),
                o.max_batch_tasks
            ),
        )
        .with_details(json!({ "tasks": items.tasks.len(), "limit": o.max_batch_tasks })));
    }
    ::metrics::histogram!(crate::metrics::TASKS_BATCH_CREATED.name)
        .record(items.tasks.len() as f64);
    let parsed: Vec<Result<CreateTask, Error>> = items
        .tasks
        .iter()
        .map(|raw| {
            serde_json::from_str(raw.get()).map_err(|e| refused_body(raw.get().as_bytes(), e))
        })
        .collect();
    check_unique_keys(&parsed)?;
    let mut results: Vec<Option<BatchItem>> = vec![None; parsed.len()];
    // The item of each task in the batch, with its template and (keyed only) its context, to
    // tell a repeat from a reused key.
    let mut placed: Vec<(usize, Uuid, Option<Value>)> = Vec::new();
    let mut batch = CreateBatch::default();
    for (index, item) in parsed.into_iter().enumerate() {
        let len = items.tasks[index].get().len();
        let checked = match item {
            Ok(req) => check_request(&shared, &caller, req, len).await,
            Err(e) => Err(e),
        };
        let added = checked.and_then(|c| {
            let keyed = c.idempotency_key.is_some().then(|| c.context.clone());
            let template = c.entry.id;
            batch
                .add(NewTask {
                    template_id: c.entry.id,
                    template: &c.entry.loaded,
                    context: c.context,
                    idempotency_key: c.idempotency_key,
                    run_at: c.run_at,
                    children: c.children,
                    parent: None,
                    priority: c.priority,
                    token_id: caller.token_id(),
                })
                .map(|()| (template, keyed))
                .map_err(|k| crate::store::Error::Limits(k).into())
        });
        match added {
            Ok((template, keyed)) => placed.push((index, template, keyed)),
            Err(e) => results[index] = Some(refused(index, e)),
        }
    }
    let answers = if batch.is_empty() {
        Vec::new()
    } else {
        let (answers, effects) = shared.store.create_tasks(batch).await?;
        executor::execute(&shared, effects).await;
        answers
    };
    for ((index, template, keyed), a) in placed.into_iter().zip(answers) {
        results[index] = Some(if a.created {
            item(index, BatchStatus::Created, a.task_id)
        } else if a.template_id == template && keyed.as_ref() == Some(&a.context) {
            item(index, BatchStatus::Existing, a.task_id)
        } else {
            refused(index, key_reused(a.task_id))
        });
    }
    let results: Vec<BatchItem> = results.into_iter().flatten().collect();
    let count = |s: BatchStatus| results.iter().filter(|r| r.status == s).count();
    let (created, existing, refused) = (
        count(BatchStatus::Created),
        count(BatchStatus::Existing),
        count(BatchStatus::Refused),
    );
    caller.audit().target(
        "tasks",
        json!({ "created": created, "existing": existing, "refused": refused }),
    );
    Ok(Json(BatchCreated {
        created,
        existing,
        refused,
        results,
    }))
}

fn item(index: usize, status: BatchStatus, task_id: Uuid) -> BatchItem {
    BatchItem {
        index,
        status,
        task_id: Some(task_id),
        error: None,
    }
}

fn refused(index: usize, e: Error) -> BatchItem {
    BatchItem {
        index,
        status: BatchStatus::Refused,
        task_id: None,
        error: Some(e.detail()),
    }
}

/// No two items of a batch may share an idempotency key (which would they answer?).
fn check_unique_keys(items: &[Result<CreateTask, Error>]) -> Result<(), Error> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let Some(key) = item
            .as_ref()
            .ok()
            .and_then(|r| r.idempotency_key.as_deref())
        else {
            continue;
        };
        if let Some(first) = seen.insert(key, index) {
            return Err(Error::bad_request(
                "duplicate_idempotency_key",
                format!("items {first} and {index} share the idempotency key {key:?}"),
            )
            .with_details(json!({ "key": key, "indexes": [first, index] })));
        }
    }
    Ok(())
}

/// The template versions a new task's child steps start, pinned now (422
/// `unknown_child_template` for one that is not registered).
pub(super) async fn pin_children(
    shared: &Shared,
    loaded: &tasker_shared::template::Loaded,
) -> Result<Vec<Option<Value>>, Error> {
    shared
        .catalog
        .pin_children(loaded)
        .await
        .map_err(|e| match e {
            crate::catalog::PinError::Store(e) => e.into(),
            unknown @ crate::catalog::PinError::Unknown { .. } => Error::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_child_template",
                unknown.to_string(),
            ),
        })
}

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
        (status = 400, description = "`invalid_state`, `invalid_limit`, `invalid_id`, `invalid_time`, `invalid_context_filter`, `context_filter_too_large` (over `orchestrator.max_context_filter_bytes`), `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `namespace` is one the token does not cover", body = ErrorBody),
        (status = 503, description = "`query_timeout`: the query ran past `orchestrator.list_timeout_ms`", body = ErrorBody),
    ))]
pub(super) async fn list_tasks(
    State(shared): State<Shared>,
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
    let tasks = shared
        .store
        .tasks(&TaskFilter {
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
        })
        .await?;
    let next_before = if tasks.len() as i64 == limit {
        tasks.last().map(|t| t.id)
    } else {
        None
    };
    Ok(Json(TaskPage { tasks, next_before }))
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
    let task = fetch_task(&shared, id).await?;
    let Some(wait) = wait else {
        return Ok(Json(task));
    };
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
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<StepPage>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    let (after, limit) = q.parse()?;
    fetch_task(&shared, id).await?;
    let (mut steps, next) = shared
        .store
        .steps(
            id,
            after,
            limit,
            shared.config.orchestrator.parent_page_bytes,
        )
        .await?;
    shared.store.flag_unserved(&mut steps).await?;
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
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<History>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
    fetch_task(&shared, id).await?;
    let transitions = shared.store.history(id).await?;
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

/// Why a creation request's body was refused: `invalid_run_at` for a `run_at` that is not an
/// RFC 3339 time (read again only on this error path), else `invalid_json`.
fn refused_body(body: &[u8], e: serde_json::Error) -> Error {
    let run_at = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("run_at").cloned())
        .filter(|v| !v.is_null());
    if let Some(v) = run_at
        && serde_json::from_value::<DateTime<Utc>>(v.clone()).is_err()
    {
        return Error::bad_request(
            "invalid_run_at",
            format!(
                "`run_at` must be an RFC 3339 time with an offset, such as \"2026-12-01T02:30:00Z\" (got {v})"
            ),
        );
    }
    Error::bad_request("invalid_json", format!("invalid request body: {e}"))
}

/// When a created task starts: `run_at`, or now plus `delay`; `None` for now. At most a year
/// ahead.
fn start_time(req: &CreateTask) -> Result<Option<DateTime<Utc>>, Error> {
    let now = chrono::Utc::now();
    let at = match (&req.run_at, &req.delay) {
        (Some(_), Some(_)) => {
            return Err(Error::bad_request(
                "invalid_run_at",
                "give `run_at` or `delay`, not both",
            ));
        }
        (Some(at), None) => *at,
        (None, Some(delay)) => {
            let d = tasker_shared::time::parse_duration("delay", delay)
                .map_err(|e| Error::bad_request("invalid_delay", e.to_string()))?;
            now + chrono::Duration::from_std(d).unwrap_or_default()
        }
        (None, None) => return Ok(None),
    };
    let limit = chrono::Duration::from_std(tasker_shared::time::MAX_DURATION).unwrap_or_default();
    if at > now + limit {
        return Err(Error::bad_request(
            "invalid_run_at",
            format!("`run_at` must be at most a year ahead (got {at})"),
        ));
    }
    Ok(Some(at))
}

/// The task context of a creation request: an object (`{}` if none), at most
/// `orchestrator.max_context_bytes` of JSON, that PostgreSQL can store.
fn checked_context(
    shared: &Shared,
    body_len: usize,
    context: Option<Value>,
) -> Result<Value, Error> {
    let context = context.unwrap_or_else(|| json!({}));
    if !context.is_object() {
        return Err(Error::bad_request(
            "invalid_context",
            "`context` must be a JSON object",
        ));
    }
    // The body bounds the context's size: encode it again only when the body alone is over.
    let limit = shared.config.orchestrator.max_context_bytes;
    let size = if body_len <= limit {
        0
    } else {
        serde_json::to_vec(&context).map_or(usize::MAX, |b| b.len())
    };
    if size > limit {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "context_too_large",
            format!("`context` is {size} bytes of JSON; the limit is {limit} (orchestrator.max_context_bytes)"),
        )
        .with_details(json!({ "bytes": size, "limit": limit })));
    }
    if let Err(problem) = json_check::check(&context, json_check::MAX_DEPTH) {
        return Err(
            Error::bad_request("invalid_context", format!("`context` {problem}"))
                .with_details(json!({ "problem": problem.code() })),
        );
    }
    Ok(context)
}

/// An idempotency key is 1 to 255 characters, none of them control characters.
fn check_idempotency_key(key: Option<&str>) -> Result<(), Error> {
    match key {
        Some(key) if key.is_empty() || key.len() > 255 || key.chars().any(char::is_control) => {
            Err(Error::bad_request(
                "invalid_idempotency_key",
                "`idempotency_key` must be 1 to 255 characters, none of them control characters",
            ))
        }
        _ => Ok(()),
    }
}

/// A new task's trace (tracing on): recorded with the task, and carried by its first steps.
async fn trace(
    shared: &Shared,
    span: &tasker_telemetry::Span,
    created: &mut crate::store::Created,
) -> Result<(), Error> {
    let traceparent = span.traceparent();
    span.set(tasker_telemetry::attr(
        "tasker.task_id",
        created.task_id.to_string(),
    ));
    shared
        .store
        .set_traceparent(created.task_id, &traceparent)
        .await?;
    for m in &mut created.effects.dispatch {
        m.traceparent = Some(traceparent.clone());
    }
    Ok(())
}
