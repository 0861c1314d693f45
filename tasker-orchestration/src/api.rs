//! The REST API (axum). Built as `router(shared)` so tests can drive it without a socket.
//!
//! | method | path | |
//! |---|---|---|
//! | POST | /v1/tasks | create a task (`idempotency_key` returns the same task again; `run_at` or `delay` starts it later) |
//! | GET | /v1/tasks | list tasks (`state`, `namespace`, `name`, `limit`, `before`) |
//! | GET | /v1/tasks/{id} | a task (`wait=SECONDS` returns as soon as it is terminal) |
//! | GET | /v1/tasks/{id}/steps | its steps with results, errors and timings, paged (`?after=&limit=`) |
//! | GET | /v1/tasks/{id}/history | its transition history |
//! | GET | /v1/tasks/{id}/events | Server-Sent Events: a `snapshot` (task, steps, history) now and after every change |
//! | POST | /v1/tasks/{id}/cancel | cancel it (a running or a scheduled one) |
//! | POST | /v1/tasks/{id}/signals/{name} | send it a signal (`signal_id`, `payload`) for a wait step |
//! | GET | /v1/tasks/{id}/signals | its signals, and the steps that consumed them |
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
//! | GET, POST | /v1/schedules | schedules (`namespace`); create or update one by namespace and name |
//! | GET, PATCH, DELETE | /v1/schedules/{namespace}/{name} | one (with its next fires); change some fields; delete |
//! | POST | /v1/schedules/{namespace}/{name}/pause, /resume, /trigger, /backfill | pause (`note`), resume, start a task now, start the tasks of a past range |
//! | GET, POST | /v1/tokens | API tokens (admin): list, create (`{name, scope}`; the token is shown once) |
//! | DELETE | /v1/tokens/{name} | revoke one |
//! | GET | /v1/audit | the audit log (admin): who asked to change what, when, from where, answered how |
//! | GET | /health, /ready, /metrics | liveness, readiness, Prometheus |
//! | GET | /openapi.json | the OpenAPI 3.1 document of every route |
//! | GET | /ui/ | the dashboard (assets embedded; `/` and `/ui` redirect there) |
//!
//! Every route is registered with `routes!` together with its `#[utoipa::path]` operation, so
//! `/openapi.json` ([`openapi`]) is generated from the same definitions the router serves;
//! `clippy.toml` forbids registering one any other way, and `tests/fast/openapi.rs` checks that each
//! documented operation is served.
//!
//! Unless `auth = "off"`, every route but `/health` and `/ready` needs `Authorization: Bearer
//! <token>`: `read` for every GET, `write` to create, cancel and repair tasks and register
//! templates, `admin` for dead-letter replay/discard and tokens; a token limited to namespaces
//! reaches those only (`access`). Before any of that, whatever the mode, `guard` refuses
//! foreign `Host` names, browser requests from other sites and bodies that are not JSON.

mod access;
mod audit;
mod auth;
mod dead_letters;
mod error;
mod extract;
mod guard;
mod limits;
mod live;
mod ops;
mod per_token;
mod repair;
mod retention;
mod schedules;
mod signals;
mod tasks;
mod templates;
mod ui;
mod workers;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use utoipa::OpenApi;
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use tasker_shared::api::ErrorBody;

pub use access::Caller;
pub use error::Error;

use crate::shared::Shared;
use crate::store::TaskView;

/// The whole HTTP application, `/openapi.json` included.
pub fn router(shared: Shared) -> Router {
    let limit = shared.config.orchestrator.max_body_bytes;
    let (router, mut document) = routes().split_for_parts();
    common_responses(&mut document);
    router
        .route_layer(axum::middleware::from_fn(run_to_completion))
        .route_layer(axum::middleware::from_fn(per_token::gate))
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            auth::require,
        ))
        // Outside the token check, so a refused request has its audit row too.
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            audit::record,
        ))
        // Outside both: a request that changes state, and its audit row, outlive its client.
        .route_layer(axum::middleware::from_fn(run_to_completion))
        // Outside the token check, so a refused token is counted under its route.
        .route_layer(axum::middleware::from_fn(matched_route))
        .fallback(|| async { Error::not_found("no_such_route", "no such route") })
        .method_not_allowed_fallback(|| async {
            Error::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not accept that method",
            )
        })
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            retention::gone,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .layer(Extension(Arc::new(document)))
        .layer(Extension(per_token::PerToken::new(
            &shared.config.orchestrator,
        )))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            guard::check,
        ))
        .layer(axum::middleware::from_fn(http_metrics))
        .with_state(shared)
}

/// The route pattern that served a request, carried on its answer to [`http_metrics`].
#[derive(Clone)]
pub(super) struct Route(String);

/// Inside the router, where the matched route is known: hands it to [`http_metrics`] outside.
async fn matched_route(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| Route(p.as_str().to_owned()));
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// Counts and times each answer by route pattern, method and final status (`tasker_http_*`),
/// outside every other layer. The labels stay bounded: patterns, not paths (`unmatched` for a
/// request no route took); the methods HTTP defines, any other as `other`.
async fn http_metrics(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use axum::http::Method;
    let method = match *request.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<Route>()
        .map_or_else(|| "unmatched".to_owned(), |r| r.0.clone());
    let status = response.status().as_u16().to_string();
    ::metrics::counter!(crate::metrics::HTTP_REQUESTS.name, "route" => route.clone(),
        "method" => method, "status" => status)
    .increment(1);
    ::metrics::histogram!(crate::metrics::HTTP_SECONDS.name, "route" => route, "method" => method)
        .record(started.elapsed().as_secs_f64());
    response
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
    let mut document = routes().split_for_parts().1;
    common_responses(&mut document);
    document
}

/// [`openapi`] as the repository keeps it in `openapi.json` (what `tasker-orchestrator openapi`
/// prints): pretty-printed JSON, keys in the document's order, no trailing newline. The Python
/// and TypeScript clients are generated from that file; `tests/fast/openapi.rs` fails when it
/// is not this text.
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&openapi()).expect("the OpenAPI document serializes")
}

/// The answers any operation may give besides its own, with their error codes: the layers in
/// front of every handler (`guard`, `auth`) and a failure of the server. An operation that lists
/// one of these statuses itself keeps its own description.
fn common_responses(document: &mut Document) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let answer = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build()
    };
    let refused_host = "`host_not_allowed` (a Host this server does not answer to), `cross_origin` (a browser request from another site)";
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
        ];
        for op in operations.into_iter().flatten() {
            // Open operations name an empty requirement (`security(())`); the others use the
            // document's bearer token.
            let open = op
                .security
                .as_ref()
                .is_some_and(|s| s.iter().all(|r| r == &Default::default()));
            let mut extra = Vec::new();
            if open {
                extra.push(("403", refused_host.to_owned()));
            } else {
                extra.push(("401", "`unauthenticated`: no token, or one that is unknown, revoked or expired (when the orchestrator requires tokens)".to_owned()));
                extra.push(("403", format!("`forbidden`: the token's scope or namespaces do not reach this; {refused_host}")));
            }
            if op.request_body.is_some() {
                extra.push((
                    "415",
                    "`unsupported_media_type`: a request body that is not JSON".to_owned(),
                ));
            }
            extra.push((
                "500",
                "`internal`: the server failed; its log says why".to_owned(),
            ));
            for (status, description) in extra {
                op.responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| answer(&description).into());
            }
        }
    }
}

/// Every route with its OpenAPI operation. `routes!` takes the path and method from each
/// handler's `#[utoipa::path]`, so a route cannot be served without being documented.
fn routes() -> OpenApiRouter<Shared> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(tasks::create_task, tasks::list_tasks))
        .routes(routes!(tasks::create_tasks))
        .routes(routes!(tasks::get_task))
        .routes(routes!(tasks::task_steps))
        .routes(routes!(tasks::parent_results))
        .routes(routes!(tasks::task_history))
        .routes(routes!(live::task_events))
        .routes(routes!(tasks::cancel_task))
        .routes(routes!(signals::send))
        .routes(routes!(signals::list))
        .routes(routes!(schedules::put, schedules::list))
        .routes(routes!(
            schedules::show,
            schedules::update,
            schedules::delete
        ))
        .routes(routes!(schedules::pause))
        .routes(routes!(schedules::resume))
        .routes(routes!(schedules::trigger))
        .routes(routes!(schedules::backfill))
        .routes(routes!(repair::retry_task))
        .routes(routes!(repair::retry_step))
        .routes(routes!(repair::resolve_step))
        .routes(routes!(templates::register, templates::list))
        .routes(routes!(templates::show))
        .routes(routes!(dead_letters::list))
        .routes(routes!(dead_letters::show, dead_letters::discard))
        .routes(routes!(dead_letters::replay))
        .routes(routes!(limits::concurrency))
        .routes(routes!(limits::rates))
        .routes(routes!(limits::pause, limits::resume))
        .routes(routes!(retention::policy))
        .routes(routes!(retention::purge))
        .routes(routes!(workers::list))
        .routes(routes!(workers::report, workers::leave))
        .routes(routes!(auth::list_tokens, auth::create_token))
        .routes(routes!(auth::revoke_token))
        .routes(routes!(audit::list))
        .routes(routes!(ops::health))
        .routes(routes!(ops::ready))
        .routes(routes!(ops::metrics))
        .routes(routes!(ops::openapi_json))
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
        (name = "schedules", description = "Cron schedules that start tasks"),
        (name = "dead-letters", description = "Messages no one could process"),
        (name = "workers", description = "The workers registry: who is up and what each serves"),
        (name = "limits", description = "Concurrency and rate keys; pausing a rate key"),
        (name = "retention", description = "Purging finished tasks"),
        (name = "tokens", description = "API tokens (admin scope)"),
        (name = "audit", description = "The audit log: every request that changed something (admin scope)"),
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

/// The request body, or the API's error for one that is too large, too slow or unreadable.
fn request_body(shared: &Shared, body: Result<Bytes, BytesRejection>) -> Result<Bytes, Error> {
    body.map_err(|e| {
        if let Some(slow) = slow_body(&e) {
            ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name, "bound" => slow.bound)
                .increment(1);
            return Error::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_too_slow",
                slow.message.clone(),
            )
            .with_details(serde_json::json!({ "bound": slow.bound }));
        }
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

/// The pace a body broke, if that is why it could not be read (`crate::serve::body`).
fn slow_body(e: &BytesRejection) -> Option<&crate::serve::body::SlowBody> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(slow) = s.downcast_ref::<crate::serve::body::SlowBody>() {
            return Some(slow);
        }
        source = s.source();
    }
    None
}

/// The request body as JSON of type `T`, or `invalid_json` saying why not.
fn json_body<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Error> {
    let body = request_body(shared, body)?;
    parse_json(&body)
}

/// [`json_body`] for a body that may be left out (empty or blank: `T::default()`).
fn optional_json_body<T: serde::de::DeserializeOwned + Default>(
    shared: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Error> {
    let body = request_body(shared, body)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse_json(&body)
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body)
        .map_err(|e| Error::bad_request("invalid_json", format!("invalid request body: {e}")))
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

/// A page's `?limit=` for the lists of keys and schedules: 1 to 1,000, default 500 (most
/// deployments see all of theirs at once; clients follow `next` beyond).
fn page_limit(limit: Option<i64>) -> Result<i64, Error> {
    let limit = limit.unwrap_or(500);
    if (1..=1_000).contains(&limit) {
        Ok(limit)
    } else {
        Err(Error::bad_request(
            "invalid_limit",
            "`limit` must be between 1 and 1000",
        ))
    }
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
