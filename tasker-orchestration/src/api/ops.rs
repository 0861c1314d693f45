//! Operations routes: liveness, readiness, Prometheus metrics, and this API's OpenAPI document.

use std::collections::{HashMap, HashSet};
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
    if let Err(e) = worker_gauges(&shared).await {
        tracing::warn!(error = %e, "metrics: cannot count workers and unserved steps");
    }
    if let Err(e) = flow_gauges(&shared).await {
        tracing::warn!(error = %e, "metrics: cannot count concurrency slots and throttled steps");
    }
    crate::metrics::handle().render()
}

/// Labels set at an earlier scrape, set to 0 when they no longer occur.
static SEEN: std::sync::Mutex<Option<(HashSet<String>, HashSet<String>)>> =
    std::sync::Mutex::new(None);

/// Live workers by language and unserved steps by namespace.
async fn worker_gauges(shared: &Shared) -> Result<(), crate::store::Error> {
    let workers = shared.store.workers(false).await?;
    let served = crate::store::Served::new(&workers);
    let mut live: HashMap<String, usize> = HashMap::new();
    for w in &workers {
        *live.entry(w.language.clone()).or_default() += 1;
    }
    let mut unserved: HashMap<String, i64> = HashMap::new();
    for (namespace, handler, n) in shared.store.waiting_for_workers().await? {
        let count = unserved.entry(namespace.clone()).or_default();
        if !served.serves(&namespace, &handler) {
            *count += n;
        }
    }
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let (languages, namespaces) = seen.get_or_insert_with(Default::default);
    for l in languages.iter().filter(|l| !live.contains_key(*l)) {
        ::metrics::gauge!(crate::metrics::WORKERS_LIVE.name, "language" => l.clone()).set(0.0);
    }
    for (l, n) in &live {
        ::metrics::gauge!(crate::metrics::WORKERS_LIVE.name, "language" => l.clone())
            .set(*n as f64);
        languages.insert(l.clone());
    }
    for ns in namespaces.iter().filter(|ns| !unserved.contains_key(*ns)) {
        ::metrics::gauge!(crate::metrics::STEPS_UNSERVED.name, "namespace" => ns.clone()).set(0.0);
    }
    for (ns, n) in &unserved {
        ::metrics::gauge!(crate::metrics::STEPS_UNSERVED.name, "namespace" => ns.clone())
            .set(*n as f64);
        namespaces.insert(ns.clone());
    }
    Ok(())
}

/// Scopes whose slots an earlier scrape saw in use, set to 0 when none is.
static SCOPES: std::sync::Mutex<Option<HashSet<String>>> = std::sync::Mutex::new(None);

/// Concurrency slots in use by scope and throttled steps by kind.
async fn flow_gauges(shared: &Shared) -> Result<(), crate::store::Error> {
    let (slots, throttled) = shared.store.flow_counts().await?;
    let mut by_kind: HashMap<&str, i64> = ["concurrency", "rate", "paused"]
        .into_iter()
        .map(|k| (k, 0))
        .collect();
    for (kind, n) in &throttled {
        if let Some(count) = by_kind.get_mut(kind.as_str()) {
            *count += n;
        }
    }
    for (kind, n) in by_kind {
        ::metrics::gauge!(crate::metrics::STEPS_THROTTLED.name, "kind" => kind).set(n as f64);
    }
    let mut seen = SCOPES.lock().unwrap_or_else(|p| p.into_inner());
    let scopes = seen.get_or_insert_with(Default::default);
    for scope in scopes
        .iter()
        .filter(|s| !slots.iter().any(|(k, _)| k == *s))
    {
        ::metrics::gauge!(crate::metrics::SLOTS_IN_USE.name, "scope" => scope.clone()).set(0.0);
    }
    for (scope, n) in &slots {
        ::metrics::gauge!(crate::metrics::SLOTS_IN_USE.name, "scope" => scope.clone())
            .set(*n as f64);
        scopes.insert(scope.clone());
    }
    Ok(())
}
