//! The dashboard's assets (`ui/`), embedded in the binary so nothing else is deployed. They are
//! open to anyone (they hold no data); the page asks for an API token when the API wants one.

use std::sync::LazyLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

/// What the page may load and talk to: only this origin.
const POLICY: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                      frame-ancestors 'none'";

/// One embedded asset, with its validator and its gzip form (made once, at its first request).
struct Asset {
    content_type: &'static str,
    body: &'static str,
    /// A strong validator: the SHA-256 of the body (the same in every orchestrator of a build).
    etag: String,
    gzip: Vec<u8>,
}

impl Asset {
    fn new(content_type: &'static str, body: &'static str) -> Asset {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(body.as_bytes());
        let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let gzip = std::io::Write::write_all(&mut gz, body.as_bytes())
            .and_then(|()| gz.finish())
            .unwrap_or_default();
        Asset {
            content_type,
            body,
            etag: format!("\"{hex}\""),
            gzip,
        }
    }

    /// 304 when the browser holds this version (`If-None-Match`); else the body, gzipped when
    /// the browser takes it. Revalidated at every load (`no-cache`), so a new orchestrator
    /// version's assets are picked up at once and an unchanged one costs a few bytes.
    fn serve(&self, request: &HeaderMap) -> Response {
        let held = request
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(',')
                    .any(|t| t.trim() == self.etag || t.trim() == "*")
            });
        let gzip = !self.gzip.is_empty()
            && request
                .get(header::ACCEPT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
        let mut response = if held {
            StatusCode::NOT_MODIFIED.into_response()
        } else if gzip {
            ([(header::CONTENT_ENCODING, "gzip")], self.gzip.clone()).into_response()
        } else {
            self.body.into_response()
        };
        let h = response.headers_mut();
        for (name, value) in [
            (header::CONTENT_TYPE, self.content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::VARY, "Accept-Encoding"),
        ] {
            h.insert(name, HeaderValue::from_static(value));
        }
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            h.insert(header::ETAG, etag);
        }
        response
    }
}

/// The dashboard's page.
#[utoipa::path(get, path = "/ui/", operation_id = "ui_index", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/html", body = String), (status = 304, description = "Not modified (`If-None-Match`)")))]
pub(super) async fn index(request: HeaderMap) -> Response {
    static INDEX: LazyLock<Asset> = LazyLock::new(|| {
        Asset::new(
            "text/html; charset=utf-8",
            include_str!("../../ui/index.html"),
        )
    });
    INDEX.serve(&request)
}

/// The dashboard's script: the vendored layout library (`ui/vendor/`, its global `dagre`) and
/// the files of `ui/app/` served as one, in this order (one concept each: the shared helpers and
/// router, then the task page's parts, then one file a page, and `start.js`, which starts the app,
/// last; plain top-level code, no build step, so the order is all that joins them).
#[utoipa::path(get, path = "/ui/app.js", operation_id = "ui_script", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/javascript", body = String), (status = 304, description = "Not modified (`If-None-Match`)")))]
pub(super) async fn script(request: HeaderMap) -> Response {
    static SCRIPT: LazyLock<Asset> = LazyLock::new(|| {
        Asset::new(
            "text/javascript; charset=utf-8",
            concat!(
                include_str!("../../ui/vendor/dagre.min.js"),
                include_str!("../../ui/app/core.js"),
                include_str!("../../ui/app/searched_list.js"),
                include_str!("../../ui/app/live.js"),
                include_str!("../../ui/app/live_share.js"),
                include_str!("../../ui/app/dag.js"),
                include_str!("../../ui/app/step_order.js"),
                include_str!("../../ui/app/timeline.js"),
                include_str!("../../ui/app/step_card.js"),
                include_str!("../../ui/app/step_groups.js"),
                include_str!("../../ui/app/task_dag.js"),
                include_str!("../../ui/app/task_pickers.js"),
                include_str!("../../ui/app/task_lookup.js"),
                include_str!("../../ui/app/saved_views.js"),
                include_str!("../../ui/app/task_list.js"),
                include_str!("../../ui/app/task_steps.js"),
                include_str!("../../ui/app/task_children.js"),
                include_str!("../../ui/app/task_signals.js"),
                include_str!("../../ui/app/task_streams.js"),
                include_str!("../../ui/app/task_view.js"),
                include_str!("../../ui/app/operations.js"),
                include_str!("../../ui/app/templates.js"),
                include_str!("../../ui/app/schedules.js"),
                include_str!("../../ui/app/dead_letters.js"),
                include_str!("../../ui/app/workers.js"),
                include_str!("../../ui/app/limits.js"),
                include_str!("../../ui/app/retention.js"),
                include_str!("../../ui/app/audit.js"),
                include_str!("../../ui/app/events.js"),
                include_str!("../../ui/app/webhooks.js"),
                include_str!("../../ui/app/alerts.js"),
                include_str!("../../ui/app/start.js"),
            ),
        )
    });
    SCRIPT.serve(&request)
}

/// The dashboard's styles.
///
/// `ui/app.css` (the colours of both schemes, the pages), then `ui/lists.css` (the searched and
/// paged lists, the task list's lookup and saved views), served as one.
#[utoipa::path(get, path = "/ui/app.css", operation_id = "ui_style", tag = "dashboard", security(()),
    responses((status = 200, content_type = "text/css", body = String), (status = 304, description = "Not modified (`If-None-Match`)")))]
pub(super) async fn style(request: HeaderMap) -> Response {
    static STYLE: LazyLock<Asset> = LazyLock::new(|| {
        Asset::new(
            "text/css; charset=utf-8",
            concat!(
                include_str!("../../ui/app.css"),
                include_str!("../../ui/lists.css")
            ),
        )
    });
    STYLE.serve(&request)
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
