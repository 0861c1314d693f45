//! The layers every route shares, outside its handler: the matched route for the metrics,
//! the metrics themselves, and running a request that changes state to its end.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::Error;

/// The route pattern that served a request, carried on its answer to [`http_metrics`].
#[derive(Clone)]
pub(super) struct Route(pub(super) String);

/// Inside the router, where the matched route is known: hands it to [`http_metrics`] outside.
pub(super) async fn matched_route(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
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
pub(super) async fn http_metrics(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
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

/// With `orchestrator.access_log`: one line per answer, outside every other layer (so a refusal
/// of the guard is logged too), with its method, path (never its query), route pattern, status,
/// time and peer address.
pub(super) async fn access_log(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.to_string());
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<Route>()
        .map_or("unmatched", |r| r.0.as_str());
    tracing::info!(target: "tasker_orchestration::access", method = %method, path, route,
        status = response.status().as_u16(), ms = started.elapsed().as_secs_f64() * 1000.0,
        peer = peer.as_deref().unwrap_or("unknown"), "request");
    response
}

/// A request that changes state runs to its end even if its client goes away. Hyper drops the
/// handler of a connection that closed; dropped between its commit and its publishing, a
/// created task's first steps (or what a cancel or repair made ready) would stay `enqueued`
/// with no message while this orchestrator lives on, and the sweeper only re-sends for
/// orchestrators that died. Reads are dropped with their client as before.
pub(super) async fn run_to_completion(
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
