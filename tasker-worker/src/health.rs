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

/// Where the health port is: the configured address and port, and whether the port is the
/// default one (nobody chose it: `worker.health_port` set by no file, variable or flag).
#[derive(Debug, Clone, Copy)]
pub struct Port {
    pub bind: std::net::IpAddr,
    pub port: u16,
    pub defaulted: bool,
}

/// The health port could not be opened.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot serve /health on {addr}: {source}; choose another port with --health-port (or TASKER_WORKER__HEALTH_PORT), or 0 for any free one"
)]
pub struct BindError {
    pub addr: SocketAddr,
    #[source]
    pub source: std::io::Error,
}

/// Binds the health port. A default port another process holds (the demo's worker, a second
/// worker on the machine) is not worth failing a start for: a free port is taken instead, and
/// said. A port someone chose fails the start, naming it.
async fn bind(at: Port) -> Result<tokio::net::TcpListener, BindError> {
    let addr = SocketAddr::new(at.bind, at.port);
    match tokio::net::TcpListener::bind(addr).await {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && at.defaulted && at.port != 0 => {
            let listener = tokio::net::TcpListener::bind((at.bind, 0))
                .await
                .map_err(|source| BindError { addr, source })?;
            if let Ok(instead) = listener.local_addr() {
                tracing::info!(%instead, "the default health port {addr} is in use; serving /health on {instead} instead (--health-port or TASKER_WORKER__HEALTH_PORT chooses one)");
            }
            Ok(listener)
        }
        bound => bound.map_err(|source| BindError { addr, source }),
    }
}

/// Serves `/health` and `/metrics` on `at` (port 0 picks a free port) until `cancel` fires;
/// returns the bound address.
pub async fn serve(
    at: Port,
    stats: Arc<Stats>,
    namespaces: Vec<String>,
    language: &'static str,
    cancel: CancellationToken,
) -> Result<SocketAddr, BindError> {
    crate::metrics::handle();
    let listener = bind(at).await?;
    let addr = listener.local_addr().map_err(|source| BindError {
        addr: SocketAddr::new(at.bind, at.port),
        source,
    })?;
    // The worker's health port has no OpenAPI document: two fixed routes, documented in the
    // README, not part of the orchestrator's API.
    #[allow(clippy::disallowed_methods)]
    let app = axum::Router::new()
        .route("/health", get(health))
        .route(
            "/metrics",
            get(|| async { tasker_shared::metric::render(crate::metrics::handle()) }),
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
            "duplicate": s.duplicate.load(Ordering::Relaxed),
        })),
    )
}
