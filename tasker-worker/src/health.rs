//! The worker's health port: `/health` (200 while connected to the broker, 503 otherwise, with
//! its namespaces and counters) and `/metrics` (Prometheus).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::worker::Stats;

#[derive(Clone)]
struct Health {
    stats: Arc<Stats>,
    namespaces: Arc<Vec<String>>,
    language: &'static str,
}

/// Serves `/health` and `/metrics` on `bind`:`port` (0 picks a free port) until `cancel`
/// fires; returns the bound address.
pub async fn serve(
    bind: std::net::IpAddr,
    port: u16,
    stats: Arc<Stats>,
    namespaces: Vec<String>,
    language: &'static str,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    crate::metrics::handle();
    let listener = tokio::net::TcpListener::bind((bind, port)).await?;
    let addr = listener.local_addr()?;
    // The worker's health port has no OpenAPI document: two fixed routes, documented in the
    // README, not part of the orchestrator's API.
    #[allow(clippy::disallowed_methods)]
    let app = axum::Router::new()
        .route("/health", get(health))
        .route(
            "/metrics",
            get(|| async { crate::metrics::handle().render() }),
        )
        .with_state(Health {
            stats,
            namespaces: Arc::new(namespaces),
            language,
        });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await;
    });
    Ok(addr)
}

async fn health(State(h): State<Health>) -> (StatusCode, Json<Value>) {
    let s = &h.stats;
    let connected = s.connected.load(Ordering::Relaxed);
    let status = if connected {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "status": if connected { "ok" } else { "disconnected" },
            "language": h.language,
            "namespaces": *h.namespaces,
            "received": s.received.load(Ordering::Relaxed),
            "succeeded": s.succeeded.load(Ordering::Relaxed),
            "failed": s.failed.load(Ordering::Relaxed),
            "in_flight": s.in_flight.load(Ordering::Relaxed),
            "running": s.running.load(Ordering::Relaxed),
            "malformed": s.malformed.load(Ordering::Relaxed),
        })),
    )
}
