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
//! | GET | /openapi.json | the OpenAPI 3.1 document of every route |
//! | GET | /ui/ | the dashboard (assets embedded; `/` and `/ui` redirect there) |
//!
//! Every route is registered with `routes!` together with its `#[utoipa::path]` operation, so
//! `/openapi.json` ([`openapi`]) is generated from the same definitions the router serves;
//! `clippy.toml` forbids registering one any other way, and `tests/openapi.rs` checks that each
//! documented operation is served.
//!
//! Unless `auth = "off"`, every route but `/health` and `/ready` needs `Authorization: Bearer
//! <token>`: `read` for every GET, `write` to create, cancel and repair tasks and register
//! templates, `admin` for dead-letter replay/discard and tokens; a token limited to namespaces
//! reaches those only (`access`). Before any of that, whatever the mode, `guard` refuses
//! foreign `Host` names, browser requests from other sites and bodies that are not JSON.

mod access;
mod auth;
mod dead_letters;
mod error;
mod extract;
mod guard;
mod live;
mod repair;
mod templates;
mod ui;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use tasker_shared::api::{
    CreateTask, ErrorBody, History, ParentResults, Readiness, StepPage, TaskPage,
};

pub use access::Caller;
pub use error::Error;
use extract::{Path, Query};

use tasker_shared::json_check;

use crate::events::Event;
use crate::executor;
use crate::shared::Shared;
use crate::store::{NewTask, TaskFilter, TaskView};

/// The whole HTTP application, `/openapi.json` included.
pub fn router(shared: Shared) -> Router {
    let limit = shared.config.orchestrator.max_body_bytes;
    let (router, document) = routes().split_for_parts();
    router
        .route_layer(axum::middleware::from_fn(run_to_completion))
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
        .layer(Extension(Arc::new(document)))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            guard::check,
        ))
        .with_state(shared)
}

/// A request that changes state runs to its end even if its client goes away. Hyper drops the
/// handler of a connection that closed; dropped between its commit and its publishing, a
/// created task's first steps (or what a cancel or repair made ready) would stay `enqueued`
/// with no message while this orchestrator lives on, and the sweeper only re-sends for
/// orchestrators that died. Reads are dropped with their client as before.
async fn run_to_completion(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    ) {
        return next.run(request).await;
    }
    match tokio::spawn(next.run(request)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "a request handler failed");
            Error::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the request failed; see the orchestrator's log",
            )
            .into_response()
        }
    }
}

/// The OpenAPI 3.1 document of every route: what `GET /openapi.json` serves.
pub fn openapi() -> Document {
    routes().split_for_parts().1
}

/// Every route with its OpenAPI operation. `routes!` takes the path and method from each
/// handler's `#[utoipa::path]`, so a route cannot be served without being documented.
fn routes() -> OpenApiRouter<Shared> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(create_task, list_tasks))
        .routes(routes!(get_task))
        .routes(routes!(task_steps))
        .routes(routes!(parent_results))
        .routes(routes!(task_history))
        .routes(routes!(live::task_events))
        .routes(routes!(cancel_task))
        .routes(routes!(repair::retry_task))
        .routes(routes!(repair::retry_step))
        .routes(routes!(repair::resolve_step))
        .routes(routes!(templates::register, templates::list))
        .routes(routes!(templates::show))
        .routes(routes!(dead_letters::list))
        .routes(routes!(dead_letters::show, dead_letters::discard))
        .routes(routes!(dead_letters::replay))
        .routes(routes!(auth::list_tokens, auth::create_token))
        .routes(routes!(auth::revoke_token))
        .routes(routes!(health))
        .routes(routes!(ready))
        .routes(routes!(metrics))
        .routes(routes!(openapi_json))
        .routes(routes!(ui::home))
        .routes(routes!(ui::slash))
        .routes(routes!(ui::index))
        .routes(routes!(ui::script))
        .routes(routes!(ui::style))
}

/// The document's own parts; the operations come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tasker",
        description = "Tasker's orchestration API: create tasks from registered templates, wait \
                       for them, read their steps and history, repair them; templates, dead \
                       letters and API tokens. Every error is `{\"error\": {\"code\", \"message\", \
                       \"details\"?}}` with a stable code. Tokens are required unless \
                       `orchestrator.auth = \"off\"`: every route but /health, /ready, \
                       /openapi.json and the dashboard's assets needs `Authorization: Bearer \
                       <token>`, of scope `read` for GET, `write` to create, cancel and repair \
                       tasks and register templates, `admin` for dead-letter replay and discard \
                       and for tokens; a token limited to namespaces gets 403 `forbidden` on \
                       anything of another. On every route, whatever the auth mode: 403 \
                       `host_not_allowed` for a Host that is not an IP address, localhost or in \
                       `orchestrator.allowed_hosts`; 403 `cross_origin` for a browser request \
                       from another site; 415 `unsupported_media_type` for a body that is not \
                       JSON (YAML on POST /v1/templates)."
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(ErrorBody)),
    tags(
        (name = "tasks", description = "Create, wait for, read and cancel tasks"),
        (name = "repair", description = "Retry or resolve a task that failed"),
        (name = "templates", description = "Registered task templates"),
        (name = "dead-letters", description = "Messages no one could process"),
        (name = "tokens", description = "API tokens (admin scope)"),
        (name = "operations", description = "Health, readiness, metrics, this document"),
        (name = "dashboard", description = "The dashboard's page and assets")
    )
)]
struct ApiDoc;

/// The `bearer` security scheme the operations name.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut Document) {
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
    }
}

/// `GET /openapi.json`.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "This document", content_type = "application/json")))]
async fn openapi_json(Extension(document): Extension<Arc<Document>>) -> Json<Arc<Document>> {
    Json(document)
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

/// Creates a task from a registered template, or returns the task an idempotency key already
/// created.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", request_body = CreateTask,
    responses(
        (status = 201, description = "Created (header `location`: its URL)", body = tasker_shared::api::Task),
        (status = 200, description = "The task this idempotency key created", body = tasker_shared::api::Task),
        (status = 400, description = "`invalid_json`, `invalid_context`, `invalid_idempotency_key`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
        (status = 409, description = "`idempotency_key_reused`: the key created a task from another template or context", body = ErrorBody),
        (status = 413, description = "`body_too_large`, `context_too_large`", body = ErrorBody),
        (status = 422, description = "`context_schema_violation` (details: the problems)", body = ErrorBody),
    ))]
async fn create_task(
    State(shared): State<Shared>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let req: CreateTask = serde_json::from_slice(&body)
        .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))?;
    caller.check(&req.namespace)?;
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
    // The task's trace (tracing on): a child of the caller's, if the request carries one.
    let span = tasker_telemetry::Span::start(
        "tasker.task.create",
        headers.get("traceparent").and_then(|v| v.to_str().ok()),
        vec![
            tasker_telemetry::attr("tasker.namespace", req.namespace.clone()),
            tasker_telemetry::attr("tasker.template", entry.loaded.template.key()),
        ],
    );
    let mut created = shared
        .store
        .create_task(NewTask {
            template_id: entry.id,
            template: &entry.loaded,
            context: context.clone(),
            idempotency_key: req.idempotency_key,
        })
        .await?;
    if let Some(span) = &span
        && created.created
    {
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
    }
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
    executor::execute(&shared, created.effects).await;
    let task = fetch_task(&shared, created.task_id).await?;
    let location = format!("/v1/tasks/{}", created.task_id);
    Ok((status, [("location", location)], Json(task)).into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// `running`, `complete`, `error` or `cancelled`.
    state: Option<String>,
    namespace: Option<String>,
    /// The template's name.
    name: Option<String>,
    /// Tasks per page: 1 to 500, 50 by default.
    limit: Option<i64>,
    /// The previous page's `next_before`: tasks created before that one.
    #[param(value_type = Option<Uuid>)]
    before: Option<String>,
}

/// Tasks, newest first, a page at a time (results are left out: `GET /v1/tasks/{id}` has them);
/// a token scoped to namespaces lists the tasks of those namespaces.
#[utoipa::path(get, path = "/v1/tasks", tag = "tasks", params(ListQuery),
    responses(
        (status = 200, body = TaskPage),
        (status = 400, description = "`invalid_state`, `invalid_limit`, `invalid_id`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `namespace` is one the token does not cover", body = ErrorBody),
    ))]
async fn list_tasks(
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
            namespaces: caller.namespace_regex(),
            name: q.name,
            before,
            limit,
        })
        .await?;
    let next_before = if tasks.len() as i64 == limit {
        tasks.last().map(|t| t.id)
    } else {
        None
    };
    Ok(Json(TaskPage { tasks, next_before }))
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

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct GetQuery {
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
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`task_not_found`", body = ErrorBody),
    ))]
async fn get_task(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<GetQuery>,
) -> Result<Json<TaskView>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
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
async fn task_steps(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<StepPage>, Error> {
    let id = parse_id(&id)?;
    caller.check_task(&shared, id).await?;
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
    Ok(Json(StepPage {
        task_id: id,
        steps,
        next,
    }))
}

/// `?after=&limit=` of `GET /v1/tasks/{id}/steps` and `…/steps/{step}/parent_results`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct PageQuery {
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
        (status = 403, description = "`forbidden`: the token does not cover the task's namespace", body = ErrorBody),
        (status = 404, description = "`step_not_found`", body = ErrorBody),
    ))]
async fn parent_results(
    State(shared): State<Shared>,
    caller: Caller,
    Path((id, step)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ParentResults<Box<RawValue>>>, Error> {
    let (id, step) = (parse_id(&id)?, parse_id(&step)?);
    caller.check_task(&shared, id).await?;
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
async fn task_history(
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
async fn cancel_task(
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

/// Liveness: the process answers.
#[utoipa::path(get, path = "/health", tag = "operations", security(()),
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = Object)))]
async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: PostgreSQL and RabbitMQ are reachable from this orchestrator.
#[utoipa::path(get, path = "/ready", tag = "operations", security(()),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready: which one is down", body = Readiness),
    ))]
async fn ready(State(shared): State<Shared>) -> (StatusCode, Json<Readiness>) {
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
        Json(Readiness {
            database: db,
            broker,
            dispatch_backlog: shared.dispatcher.backlog(),
        }),
    )
}

/// Prometheus metrics (the text exposition format); open when `orchestrator.metrics_public`.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
async fn metrics() -> String {
    crate::metrics::handle().render()
}

fn parse_id(s: &str) -> Result<Uuid, Error> {
    Uuid::parse_str(s).map_err(|_| {
        Error::bad_request("invalid_id", format!("{s:?} is not a valid task id (UUID)"))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{Method, Request};
    use axum::routing::any;
    use tokio::sync::{Notify, mpsc};
    use tower::ServiceExt;

    /// Whether a handler still finishes after its client hung up (its request's future dropped
    /// while the handler waits, as hyper drops it when the connection closes).
    async fn finishes_after_hang_up(method: Method) -> bool {
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let (finished, mut finishes) = mpsc::unbounded_channel::<()>();
        let handler = {
            let (started, release) = (started.clone(), release.clone());
            move || {
                let (started, release, finished) =
                    (started.clone(), release.clone(), finished.clone());
                async move {
                    started.notify_one();
                    release.notified().await;
                    let _ = finished.send(());
                }
            }
        };
        // A bare route to test the middleware alone, not an API route to document.
        #[allow(clippy::disallowed_methods)]
        let app = axum::Router::new()
            .route("/", any(handler))
            .route_layer(axum::middleware::from_fn(super::run_to_completion));
        let request = Request::builder()
            .method(method)
            .uri("/")
            .body(Body::empty())
            .expect("a request");
        let call = tokio::spawn(app.oneshot(request));
        tokio::time::timeout(Duration::from_secs(10), started.notified())
            .await
            .expect("the handler started");
        call.abort();
        let _ = call.await;
        release.notify_one();
        // Every sender is gone once the handler was dropped: `None` at once, no waiting.
        tokio::time::timeout(Duration::from_secs(10), finishes.recv())
            .await
            .expect("the handler either finished or was dropped")
            .is_some()
    }

    #[tokio::test]
    async fn a_request_that_changes_state_runs_to_its_end_after_its_client_hangs_up() {
        for method in [Method::POST, Method::PUT, Method::DELETE] {
            assert!(finishes_after_hang_up(method.clone()).await, "{method}");
        }
    }

    #[tokio::test]
    async fn a_read_is_dropped_with_its_client() {
        assert!(!finishes_after_hang_up(Method::GET).await);
    }
}
