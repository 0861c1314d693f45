//! The REST API (axum). Built as `router(shared)` so tests can drive it without a socket.
//!
//! | method | path | |
//! |---|---|---|
//! | POST | /v1/tasks | create a task (`idempotency_key` returns the same task again; `run_at` or `delay` starts it later) |
//! | GET | /v1/tasks | list tasks (`state`, `namespace`, `name`, `limit`, `before`) |
//! | GET | /v1/tasks/{id} | a task (`wait=SECONDS` returns as soon as it is terminal) |
//! | GET | /v1/tasks/{id}/steps | its steps with results, errors and timings, paged (`?after=&limit=`) |
//! | GET | /v1/tasks/{id}/history | its transition history |
//! | GET | /v1/tasks/{id}/steps/{step}/inputs | one attempt of a step as its handler received it (`?attempt=`): what `tasker replay` runs |
//! | GET | /v1/tasks/{id}/events | Server-Sent Events: a `snapshot` (task, steps, history) now and after every change |
//! | POST | /v1/tasks/{id}/cancel | cancel it (a running or a scheduled one) |
//! | POST | /v1/tasks/{id}/signals/{name} | send it a signal (`signal_id`, `payload`) for a wait step |
//! | GET | /v1/tasks/{id}/signals | its signals, and the steps that consumed them |
//! | POST | /v1/events | send an event: stored, it starts the tasks of the triggers it matches |
//! | POST | /v1/events:batch | many events in one transaction |
//! | GET | /v1/events/log | events, newest first (`namespace`, `name`, `before`, `limit`) |
//! | GET | /v1/events/{id} | an event and what it started |
//! | POST | /v1/tasks/{id}/retry | a task in error: run its failed step again |
//! | POST | /v1/tasks/{id}/steps/{step}/retry | the same, naming the step (id or name) |
//! | POST | /v1/tasks/{id}/steps/{step}/resolve | complete the failed step with a given `result` |
//! | POST, GET | /v1/operations | retry, resolve or cancel every task a filter matches (`dry_run`: count them); list operations |
//! | GET | /v1/operations/{id} | one, with its progress |
//! | POST | /v1/operations/{id}/cancel | stop it: the tasks not reached yet are left as they are |
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
//! | GET | /v1/webhooks | webhooks of the namespaces the token covers |
//! | PUT, GET, DELETE | /v1/webhooks/{name} | save one (the secret Tasker makes is shown once); show; remove |
//! | POST | /v1/webhooks/{name} | a signed request from another service, made an event (no token: its signature) |
//! | GET | /v1/alerts | alert rules of the namespaces the token covers, with what each last did |
//! | PUT, GET, DELETE | /v1/alerts/{name} | save one (admin; a webhook sink's secret Tasker makes is shown once); show; remove (admin) |
//! | GET, POST | /v1/tokens | API tokens (admin): list, create (`{name, scope}`; the token is shown once) |
//! | DELETE | /v1/tokens/{name} | revoke one |
//! | GET | /v1/clock | the engine's clock, its next timer, whether a step is with a worker |
//! | POST | /v1/clock/advance, /v1/clock/skip | test mode (admin): move it by `by`; to its next timer when no step is with a worker |
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
//! Unless `auth = "off"`, every route but `/health`, `/ready` and a webhook's `POST` needs `Authorization: Bearer
//! <token>`: `read` for every GET, `write` to create, cancel and repair tasks and register
//! templates, `admin` for dead-letter replay/discard and tokens; a token limited to namespaces
//! reaches those only (`access`). Before any of that, whatever the mode, `guard` refuses
//! foreign `Host` names, browser requests from other sites and bodies that are not JSON.

mod access;
mod alerts;
mod audit;
mod auth;
mod clock;
mod common;
mod dead_letters;
mod document;
mod error;
mod event_starts;
mod events;
mod extract;
mod guard;
mod limits;
mod live;
mod middleware;
mod operations;
mod ops;
mod per_token;
mod reader;
mod repair;
mod replay;
mod retention;
mod schedule_actions;
mod schedules;
mod signals;
mod start_controls;
mod streams;
mod task_batch;
mod task_create;
mod tasks;
mod templates;
mod ui;
mod webhook_receive;
mod webhooks;
mod workers;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::{Extension, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use access::Caller;
pub use error::Error;

use common::{
    check_filter, check_limit, fetch_task, is_terminal, json_body, optional_json_body, page_limit,
    parse_id, parse_id_prefix, request_body, saved, unknown_template,
};
use document::{ApiDoc, common_responses};
pub use document::{openapi, openapi_json};
use middleware::{access_log, http_metrics, matched_route, run_to_completion};

use crate::shared::Shared;

/// The whole HTTP application, `/openapi.json` included.
pub fn router(shared: Shared) -> Router {
    let limit = shared.config.orchestrator.max_body_bytes;
    let access = shared.config.orchestrator.access_log;
    let (router, mut document) = routes().split_for_parts();
    common_responses(&mut document);
    let router = router
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
        // Inside run_to_completion: a write's caller is stamped even if its client went away.
        .route_layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            reader::mark_writes,
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
        // Single creations sharing statements (`crate::creates`): ended with the router.
        .layer(Extension(crate::creates::Creates::default()))
        .layer(Extension(per_token::PerToken::new(
            &shared.config.orchestrator,
        )))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            guard::check,
        ))
        .layer(axum::middleware::from_fn(http_metrics));
    if access {
        router
            .layer(axum::middleware::from_fn(access_log))
            .with_state(shared)
    } else {
        router.with_state(shared)
    }
}

/// Every route with its OpenAPI operation. `routes!` takes the path and method from each
/// handler's `#[utoipa::path]`, so a route cannot be served without being documented.
fn routes() -> OpenApiRouter<Shared> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(task_create::create_task, tasks::list_tasks))
        .routes(routes!(task_batch::create_tasks))
        .routes(routes!(tasks::get_task))
        .routes(routes!(tasks::task_steps))
        .routes(routes!(tasks::parent_results))
        .routes(routes!(replay::step_inputs))
        .routes(routes!(tasks::task_history))
        .routes(routes!(live::task_events))
        .routes(routes!(live::watch_tasks))
        .routes(routes!(streams::read_task_stream))
        .routes(routes!(tasks::cancel_task))
        .routes(routes!(signals::send))
        .routes(routes!(signals::list))
        .routes(routes!(events::send))
        .routes(routes!(events::list))
        .routes(routes!(events::send_batch))
        .routes(routes!(events::show))
        .routes(routes!(alerts::list))
        .routes(routes!(alerts::put, alerts::show, alerts::delete))
        .routes(routes!(webhooks::list))
        .routes(routes!(
            webhooks::put,
            webhooks::show,
            webhooks::delete,
            webhook_receive::receive
        ))
        .routes(routes!(schedules::put, schedules::list))
        .routes(routes!(
            schedules::show,
            schedules::update,
            schedules::delete
        ))
        .routes(routes!(schedule_actions::pause))
        .routes(routes!(schedule_actions::resume))
        .routes(routes!(schedule_actions::trigger))
        .routes(routes!(schedule_actions::backfill))
        .routes(routes!(repair::retry_task))
        .routes(routes!(repair::retry_step))
        .routes(routes!(repair::resolve_step))
        .routes(routes!(operations::start, operations::list))
        .routes(routes!(operations::show))
        .routes(routes!(operations::cancel))
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
        .routes(routes!(workers::running))
        .routes(routes!(auth::list_tokens, auth::create_token))
        .routes(routes!(auth::revoke_token))
        .routes(routes!(audit::list))
        .routes(routes!(clock::show))
        .routes(routes!(clock::advance))
        .routes(routes!(clock::skip))
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
