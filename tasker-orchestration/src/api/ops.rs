//! Operations routes: liveness, readiness, Prometheus metrics, and this API's OpenAPI document.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::{Value, json};
use utoipa::openapi::OpenApi as Document;

use tasker_shared::api::Readiness;

use crate::shared::Shared;

/// `GET /openapi.json`.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "This document", content_type = "application/json")))]
pub(super) async fn openapi_json(
    Extension(document): Extension<Arc<Document>>,
) -> Json<Arc<Document>> {
    Json(document)
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/health", tag = "operations", security(()),
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = Object)))]
pub(super) async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: PostgreSQL and RabbitMQ are reachable from this orchestrator.
#[utoipa::path(get, path = "/ready", tag = "operations", security(()),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready: which one is down", body = Readiness),
    ))]
pub(super) async fn ready(State(shared): State<Shared>) -> (StatusCode, Json<Readiness>) {
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
pub(super) async fn metrics(State(shared): State<Shared>) -> String {
    // Gauges of timers read at the scrape (two counts on partial indexes), not at every tick.
    match shared.store.waiting_counts().await {
        Ok((waiting, scheduled)) => {
            ::metrics::gauge!(crate::metrics::STEPS_WAITING.name).set(waiting as f64);
            ::metrics::gauge!(crate::metrics::TASKS_SCHEDULED.name).set(scheduled as f64);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: cannot count waiting steps"),
    }
    crate::metrics::handle().render()
}
