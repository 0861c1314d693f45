//! Creating a task (`POST /v1/tasks`), with the checks every new task passes (body, context,
//! start time, idempotency key, start controls, reach, children); a batch of them is
//! [`super::task_batch`]'s.

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::api::{CreateTask, ErrorBody};
use tasker_shared::json_check;

use super::access::Caller;
use super::start_controls;
use super::{Error, fetch_task, request_body, unknown_template};
use crate::executor;
use crate::shared::Shared;
use crate::store::NewTask;

/// Creates a task from a registered template, or returns the task an idempotency key already
/// created.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", request_body = CreateTask,
    responses(
        (status = 201, description = "Created (header `location`: its URL)", body = tasker_shared::api::Task),
        (status = 200, description = "The task this idempotency key (or dedupe key) created, or the task of the debounce burst this request joined", body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_json`, `invalid_context`, `invalid_idempotency_key`, `invalid_run_at` (more than a year ahead, or with `delay`), `invalid_delay`, `invalid_dedupe`, `invalid_debounce`, `invalid_deadline`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
        (status = 409, description = "`idempotency_key_reused`: the key created a task from another template or context; `deduplicated`: the dedupe key's task was purged since, and its window lasts (details name the task and the window's end)", body = ErrorBody),
        (status = 413, description = "`body_too_large`, `context_too_large`", body = ErrorBody),
        (status = 422, description = "`context_schema_violation` (details: the problems), `unknown_child_template` (a child step names a template that is not registered), `concurrency_key_missing` / `rate_limit_key_missing` (a limit's key pointer finds no string, number or boolean in the context), `concurrency_key_too_long` / `rate_limit_key_too_long` (its value is over 128 bytes)", body = ErrorBody),
    ))]
pub(super) async fn create_task(
    State(shared): State<Shared>,
    Extension(creates): Extension<crate::creates::Creates>,
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
        controls,
        deadline,
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
    let new = NewTask {
        template_id: entry.id,
        template: &entry.loaded,
        context: context.clone(),
        idempotency_key,
        run_at,
        children,
        parent: None,
        priority,
        token_id: caller.token_id(),
        controls,
        deadline,
    };
    // A traced task's first steps carry its trace: it is created alone, then traced.
    let mut created = match &span {
        Some(_) => shared.store.create_task(new).await?,
        None => creates.create(&shared, new, body.len()).await?,
    };
    caller.audit().task(created.task_id);
    start_controls::count(created.controlled);
    if let Some(e) = start_controls::deduplicated(created.task_id, created.controlled) {
        return Err(e);
    }
    if let Some(span) = &span
        && created.created
    {
        trace(&shared, span, &mut created).await?;
    }
    let debounced = created.controlled == Some(crate::store::Controlled::Debounced);
    if !created.created
        && !debounced
        && (created.template_id != entry.id || created.context != context)
    {
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
pub(super) struct Checked {
    pub(super) entry: std::sync::Arc<crate::catalog::Entry>,
    pub(super) context: Value,
    pub(super) idempotency_key: Option<String>,
    pub(super) run_at: Option<DateTime<Utc>>,
    pub(super) children: Vec<Option<Value>>,
    pub(super) priority: tasker_shared::flow::Priority,
    pub(super) controls: crate::store::Controls,
    pub(super) deadline: Option<tasker_shared::deadline::Deadline>,
}

/// Checks a creation request (one, or an item of a batch whose JSON is `body_len` bytes): the
/// caller's namespaces, the context, the key, the start time, the template and its schema.
pub(super) async fn check_request(
    shared: &Shared,
    caller: &Caller,
    mut req: CreateTask,
    body_len: usize,
) -> Result<Checked, Error> {
    caller.check(&req.namespace)?;
    let context = checked_context(shared, body_len, req.context.take())?;
    let (idempotency_key, controls) = start_controls::check(&req)?;
    check_idempotency_key(idempotency_key.as_deref())?;
    let run_at = start_time(&req, shared.store.clock().now())?;
    let deadline = req
        .deadline
        .as_ref()
        .map(tasker_shared::deadline::DeadlineSpec::check)
        .transpose()
        .map_err(|e| {
            Error::bad_request("invalid_deadline", format!("`{}` {}", e.field, e.problem))
                .with_details(json!({ "field": e.field, "problem": e.problem }))
        })?;
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
        idempotency_key,
        run_at,
        children,
        priority,
        controls,
        deadline,
    })
}

pub(super) fn key_reused(task: Uuid) -> Error {
    Error::new(
        StatusCode::CONFLICT,
        "idempotency_key_reused",
        format!(
            "the idempotency key was used for task {task} with a different template or context"
        ),
    )
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

/// Why a creation request's body was refused: `invalid_run_at` for a `run_at` that is not an
/// RFC 3339 time (read again only on this error path), else `invalid_json`.
pub(super) fn refused_body(body: &[u8], e: serde_json::Error) -> Error {
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

/// When a created task starts: `run_at`, or `now` (the engine's clock) plus `delay`; `None`
/// for now. At most a year ahead.
fn start_time(req: &CreateTask, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, Error> {
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
