//! Creating tasks: one (`POST /v1/tasks`) or a batch (`POST /v1/tasks:batch`), with the checks
//! every new task passes (body, context, start time, idempotency key, reach, children).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::api::{
    BatchCreated, BatchItem, BatchStatus, CreateTask, CreateTasks, ErrorBody,
};
use tasker_shared::json_check;

use super::access::Caller;
use super::start_controls;
use super::{Error, fetch_task, request_body, unknown_template};
use crate::executor;
use crate::shared::Shared;
use crate::store::{CreateBatch, NewTask};

/// Creates a task from a registered template, or returns the task an idempotency key already
/// created.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", request_body = CreateTask,
    responses(
        (status = 201, description = "Created (header `location`: its URL)", body = tasker_shared::api::Task),
        (status = 200, description = "The task this idempotency key (or dedupe key) created, or the task of the debounce burst this request joined", body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_json`, `invalid_context`, `invalid_idempotency_key`, `invalid_run_at` (more than a year ahead, or with `delay`), `invalid_delay`, `invalid_dedupe`, `invalid_debounce`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
        (status = 409, description = "`idempotency_key_reused`: the key created a task from another template or context; `deduplicated`: the dedupe key's task was purged since, and its window lasts (details: `task_id`, `until`)", body = ErrorBody),
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
        controls,
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
            controls,
        })
        .await?;
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
struct Checked {
    entry: std::sync::Arc<crate::catalog::Entry>,
    context: Value,
    idempotency_key: Option<String>,
    run_at: Option<DateTime<Utc>>,
    children: Vec<Option<Value>>,
    priority: tasker_shared::flow::Priority,
    controls: crate::store::Controls,
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
    let (idempotency_key, controls) = start_controls::check(&req)?;
    check_idempotency_key(idempotency_key.as_deref())?;
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
        idempotency_key,
        run_at,
        children,
        priority,
        controls,
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
    let body = batch_body(o, body).await?;
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
                    controls: c.controls,
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
        start_controls::count(a.controlled());
        results[index] = Some(if a.created {
            item(index, BatchStatus::Created, a.task_id)
        } else if a.debounced || (a.template_id == template && keyed.as_ref() == Some(&a.context)) {
            item(index, BatchStatus::Existing, a.task_id)
        } else {
            refused(index, key_reused(a.task_id))
        });
    }
    let results: Vec<BatchItem> = results.into_iter().flatten().collect();
    Ok(Json(tally(&caller, results)))
}

/// A batch request's body, up to `orchestrator.max_batch_body_bytes`.
pub(super) async fn batch_body(
    o: &tasker_shared::config::OrchestratorConfig,
    body: axum::body::Body,
) -> Result<axum::body::Bytes, Error> {
    axum::body::to_bytes(body, o.max_batch_body_bytes)
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
        })
}

/// The answer to a batch: each item's result with the counts, which its audit row records.
fn tally(caller: &Caller, results: Vec<BatchItem>) -> BatchCreated {
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
    BatchCreated {
        created,
        existing,
        refused,
        results,
    }
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
        let Some(key) = item.as_ref().ok().and_then(start_controls::idempotency_key) else {
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
