//! The REST API (axum). Built as `router(shared)` so tests can drive it without a socket.
//!
//! | method | path | |
//! |---|---|---|
//! | POST | /v1/tasks | create a task (`idempotency_key` returns the same task again) |
//! | GET | /v1/tasks | list tasks (`state`, `namespace`, `name`, `limit`, `before`) |
//! | GET | /v1/tasks/{id} | a task (`wait=SECONDS` returns as soon as it is terminal) |
//! | GET | /v1/tasks/{id}/steps | its steps with results, errors and timings, paged (`?after=&limit=`) |
//! | GET | /v1/tasks/{id}/history | its transition history |
//! | GET | /v1/tasks/{id}/events | Server-Sent Events: a `snapshot` (task, steps, history) now and after every change |
//! | POST | /v1/tasks/{id}/cancel | cancel it |
//! | POST | /v1/tasks/{id}/retry | a task in error: run its failed step again |
//! | POST | /v1/tasks/{id}/steps/{step}/retry | the same, naming the step (id or name) |
//! | POST | /v1/tasks/{id}/steps/{step}/resolve | complete the failed step with a given `result` |
//! | GET | /v1/dead-letters | messages no one could process, newest first (`limit`, `before`) |
//! | GET | /v1/dead-letters/{id} | one, with its reason, headers and body |
//! | POST | /v1/dead-letters/{id}/replay | publish it again to the queue it came from |
//! | DELETE | /v1/dead-letters/{id} | discard it |
//! | POST | /v1/templates | register a template version (YAML or JSON body) |
//! | GET | /v1/templates | registered versions (`namespace`, `name`) |
//! | GET | /v1/templates/{namespace}/{name} | one version (`version`; default the newest) |
//! | GET, POST | /v1/tokens | API tokens (admin): list, create (`{name, scope}`; the token is shown once) |
//! | DELETE | /v1/tokens/{name} | revoke one |
//! | GET | /health, /ready, /metrics | liveness, readiness, Prometheus |
//! | GET | /ui | the dashboard (assets embedded; `/` redirects there) |
//!
//! When the orchestrator requires tokens ([`auth`]), every route but `/health` and `/ready`
//! needs `Authorization: Bearer <token>`: `read` for every GET, `write` to create, cancel and
//! repair tasks and register templates, `admin` for dead-letter replay/discard and tokens.

mod auth;
mod dead_letters;
mod error;
mod extract;
mod live;
mod repair;
mod templates;
mod ui;

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

pub use auth::TokenCache;
pub use error::Error;
use extract::{Path, Query};

use tasker_shared::json_check;

use crate::effects;
use crate::events::Event;
use crate::shared::Shared;
use crate::store::{NewTask, TaskFilter, TaskView};

/// The whole HTTP application.
pub fn router(shared: Shared) -> Router {
    let limit = shared.config.orchestrator.max_body_bytes;
    Router::new()
        .route("/v1/tasks", post(create_task).get(list_tasks))
        .route("/v1/tasks/{id}", get(get_task))
        .route("/v1/tasks/{id}/steps", get(task_steps))
        .route(
            "/v1/tasks/{id}/steps/{step}/parent_results",
            get(parent_results),
        )
        .route("/v1/tasks/{id}/history", get(task_history))
        .route("/v1/tasks/{id}/events", get(live::task_events))
        .route("/v1/tasks/{id}/cancel", post(cancel_task))
        .route("/v1/tasks/{id}/retry", post(repair::retry_task))
        .route(
            "/v1/tasks/{id}/steps/{step}/retry",
            post(repair::retry_step),
        )
        .route(
            "/v1/tasks/{id}/steps/{step}/resolve",
            post(repair::resolve_step),
        )
        .route(
            "/v1/templates",
            post(templates::register).get(templates::list),
        )
        .route("/v1/templates/{namespace}/{name}", get(templates::show))
        .route("/v1/dead-letters", get(dead_letters::list))
        .route(
            "/v1/dead-letters/{id}",
            get(dead_letters::show).merge(delete(dead_letters::discard)),
        )
        .route("/v1/dead-letters/{id}/replay", post(dead_letters::replay))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .route(
            "/v1/tokens",
            get(auth::list_tokens).post(auth::create_token),
        )
        .route("/v1/tokens/{name}", delete(auth::revoke_token))
        .route("/", get(ui::home))
        .route("/ui", get(ui::index))
        .route("/ui/", get(ui::index))
        .route("/ui/app.js", get(ui::script))
        .route("/ui/app.css", get(ui::style))
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            auth::require,
        ))
        .fallback(|| async { Error::not_found("no_such_route", "no such route") })
        .method_not_allowed_fallback(|| async {
            Error::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not accept that method",
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(shared)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateTask {
    namespace: String,
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    context: Option<Value>,
    #[serde(default)]
    idempotency_key: Option<String>,
}

/// The request body, or the API's error for one that is too large or unreadable.
fn request_body(shared: &Shared, body: Result<Bytes, BytesRejection>) -> Result<Bytes, Error> {
    body.map_err(|e| {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Error::new(
                status,
                "body_too_large",
                format!(
                    "request body exceeds {} bytes",
                    shared.config.orchestrator.max_body_bytes
                ),
            )
        } else {
            Error::new(status, "bad_body", e.body_text())
        }
    })
}

/// A query-string filter matched against stored text: bounded, no control characters (NUL
/// cannot even be sent to PostgreSQL).
fn check_filter(field: &str, value: Option<&str>) -> Result<(), Error> {
    match value {
        Some(v) if v.len() > 128 || v.chars().any(char::is_control) => Err(Error::bad_request(
            "invalid_query",
            format!("`{field}` must be at most 128 characters, none of them control characters"),
        )),
        _ => Ok(()),
    }
}

fn unknown_template(namespace: &str, name: &str, version: Option<&str>) -> Error {
    Error::not_found(
        "unknown_template",
        format!(
            "no template {namespace}/{name}{}",
            version.map(|v| format!("@{v}")).unwrap_or_default()
        ),
    )
}

async fn create_task(
    State(shared): State<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let req: CreateTask = serde_json::from_slice(&body)
        .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))?;
    let context = req.context.unwrap_or_else(|| json!({}));
    if !context.is_object() {
        return Err(Error::bad_request(
            "invalid_context",
            "`context` must be a JSON object",
        ));
    }
    // The body bounds the context's size: encode it again only when the body alone is over.
    let limit = shared.config.orchestrator.max_context_bytes;
    let size = if body.len() <= limit {
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
    if let Some(key) = &req.idempotency_key
        && (key.is_empty() || key.len() > 255 || key.chars().any(char::is_control))
    {
        return Err(Error::bad_request(
            "invalid_idempotency_key",
            "`idempotency_key` must be 1 to 255 characters, none of them control characters",
        ));
    }
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
    let created = shared
        .store
        .create_task(NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            context: context.clone(),
            idempotency_key: req.idempotency_key,
        })
        .await?;
    if !created.created && (created.template_id != entry.id || created.context != context) {
        return Err(Error::new(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            format!(
                "the idempotency key was used for task {} with a different template or context",
                created.task_id
            ),
        ));
    }
    let status = if created.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    effects::execute(&shared, created.effects).await;
    let task = fetch_task(&shared, created.task_id).await?;
    let location = format!("/v1/tasks/{}", created.task_id);
    Ok((status, [("location", location)], Json(task)).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    state: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    limit: Option<i64>,
    before: Option<String>,
}

async fn list_tasks(
    State(shared): State<Shared>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, Error> {
    check_filter("namespace", q.namespace.as_deref())?;
    check_filter("name", q.name.as_deref())?;
    if let Some(state) = &q.state
        && tasker_shared::TaskState::parse(state).is_none()
    {
        return Err(Error::bad_request(
            "invalid_state",
            format!("unknown state {state:?}; use running, complete, error or cancelled"),
        ));
    }
    let limit = check_limit(q.limit)?;
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let tasks = shared
        .store
        .tasks(&TaskFilter {
            state: q.state,
            namespace: q.namespace,
            name: q.name,
            before,
            limit,
        })
        .await?;
    let next = if tasks.len() as i64 == limit {
        tasks.last().map(|t| t.id.to_string())
    } else {
        None
    };
    Ok(Json(json!({ "tasks": tasks, "next_before": next })))
}

/// A list's `?limit=`: 1 to 500, default 50.
fn check_limit(limit: Option<i64>) -> Result<i64, Error> {
    let limit = limit.unwrap_or(50);
    if (1..=500).contains(&limit) {
        Ok(limit)
    } else {
        Err(Error::bad_request(
            "invalid_limit",
            "`limit` must be between 1 and 500",
        ))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetQuery {
    /// Seconds to wait for the task to become terminal.
    wait: Option<f64>,
}

async fn get_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Query(q): Query<GetQuery>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
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

fn is_terminal(task: &TaskView) -> bool {
    tasker_shared::TaskState::parse(&task.state).is_some_and(|s| s.is_terminal())
}

async fn fetch_task(shared: &Shared, id: Uuid) -> Result<TaskView, Error> {
    shared
        .store
        .task(id)
        .await?
        .ok_or_else(|| Error::not_found("task_not_found", format!("no task {id}")))
}

/// A task's steps, page by page (`?after=&limit=`): a 100,000-step task is never one answer.
async fn task_steps(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<Value>, Error> {
    let id = parse_id(&id)?;
    let (after, limit) = q.parse()?;
    fetch_task(&shared, id).await?;
    let (steps, next) = shared
        .store
        .steps(
            id,
            after,
            limit,
            shared.config.orchestrator.parent_page_bytes,
        )
        .await?;
    Ok(Json(json!({ "task_id": id, "steps": steps, "next": next })))
}

/// `?after=&limit=` of `GET /v1/tasks/{id}/steps` and `…/steps/{step}/parent_results`.
#[derive(Debug, Deserialize)]
struct PageQuery {
    after: Option<String>,
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
async fn parent_results(
    State(shared): State<Shared>,
    Path((id, step)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ParentResultsPage>, Error> {
    let (id, step) = (parse_id(&id)?, parse_id(&step)?);
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
    Ok(Json(ParentResultsPage {
        task_id: id,
        step_id: step,
        parent_results,
        next,
    }))
}

#[derive(Debug, Serialize)]
struct ParentResultsPage {
    task_id: Uuid,
    step_id: Uuid,
    parent_results: Box<RawValue>,
    next: Option<Uuid>,
}

async fn task_history(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, Error> {
    let id = parse_id(&id)?;
    fetch_task(&shared, id).await?;
    let history = shared.store.history(id).await?;
    Ok(Json(json!({ "task_id": id, "transitions": history })))
}

async fn cancel_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    match shared.store.cancel_task(id).await? {
        None => Err(Error::not_found("task_not_found", format!("no task {id}"))),
        Some((_, Some(effects))) => {
            effects::execute(&shared, effects).await;
            Ok(Json(fetch_task(&shared, id).await?))
        }
        Some((state, None)) => Err(Error::new(
            StatusCode::CONFLICT,
            "task_not_running",
            format!("task {id} is already {state}"),
        )),
    }
}

async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn ready(State(shared): State<Shared>) -> (StatusCode, Json<Value>) {
    let db = sqlx::query("SELECT 1")
        .execute(shared.store.pool())
        .await
        .is_ok();
    let broker = shared.broker_up();
    let status = if db && broker {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "database": db,
            "broker": broker,
            "dispatch_backlog": shared.dispatcher.backlog(),
        })),
    )
}

async fn metrics() -> String {
    crate::metrics::handle().render()
}

fn parse_id(s: &str) -> Result<Uuid, Error> {
    Uuid::parse_str(s).map_err(|_| {
        Error::bad_request("invalid_id", format!("{s:?} is not a valid task id (UUID)"))
    })
}
