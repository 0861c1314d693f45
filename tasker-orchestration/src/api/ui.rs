//! The dashboard's assets (`ui/`), embedded in the binary so nothing else is deployed. They are
//! open to anyone (they hold no data); the page asks for an API token when the API wants one.

use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};

/// What the page may load and talk to: only this origin.
const POLICY: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                      frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // A new orchestrator version's assets are picked up at the next load.
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// The dashboard's page.
#[utoipa::path(get, path = "/ui/", operation_id = "ui_index", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/html", body = String)))]
pub(super) async fn index() -> Response {
    asset(
        "text/html; charset=utf-8",
        include_str!("../../ui/index.html"),
    )
}

/// The dashboard's script: the vendored layout library (`ui/vendor/`, its global `dagre`) and
/// the files of `ui/app/` served as one, in this order (one concept each: the shared helpers and
/// router, then the task page's parts, then one file a page, and `start.js`, which starts the app,
/// last; plain top-level code, no build step, so the order is all that joins them).
#[utoipa::path(get, path = "/ui/app.js", operation_id = "ui_script", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/javascript", body = String)))]
pub(super) async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        concat!(
            include_str!("../../ui/vendor/dagre.min.js"),
            include_str!("../../ui/app/core.js"),
            include_str!("../../ui/app/live.js"),
            include_str!("../../ui/app/dag.js"),
            include_str!("../../ui/app/timeline.js"),
            include_str!("../../ui/app/step_card.js"),
            include_str!("../../ui/app/task_dag.js"),
            include_str!("../../ui/app/task_list.js"),
            include_str!("../../ui/app/task_steps.js"),
            include_str!("../../ui/app/task_children.js"),
            include_str!("../../ui/app/task_signals.js"),
            include_str!("../../ui/app/task_view.js"),
            include_str!("../../ui/app/operations.js"),
            include_str!("../../ui/app/templates.js"),
            include_str!("../../ui/app/schedules.js"),
            include_str!("../../ui/app/dead_letters.js"),
            include_str!("../../ui/app/workers.js"),
            include_str!("../../ui/app/limits.js"),
            include_str!("../../ui/app/retention.js"),
            include_str!("../../ui/app/audit.js"),
            include_str!("../../ui/app/start.js"),
        ),
    )
}

/// The dashboard's styles.
#[utoipa::path(get, path = "/ui/app.css", operation_id = "ui_style", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/css", body = String)))]
pub(super) async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("../../ui/app.css"))
}

/// To the dashboard.
#[utoipa::path(get, path = "/", operation_id = "ui_home", tag = "dashboard", security(()),
    responses((status = 307, description = "To /ui/")))]
pub(super) async fn home() -> Redirect {
    Redirect::temporary("/ui/")
}

/// To the dashboard's page, whose assets are relative to `/ui/`.
#[utoipa::path(get, path = "/ui", operation_id = "ui_slash", tag = "dashboard", security(()),
    responses((status = 307, description = "To /ui/")))]
pub(super) async fn slash() -> Redirect {
    Redirect::temporary("/ui/")
}
