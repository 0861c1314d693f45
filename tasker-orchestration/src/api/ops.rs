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
use crate::store::Store;

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

// The gauges counted from the database (`metrics::CLUSTER_GAUGES`) are reported by the
// longest-running live orchestrator only, so the cluster's sum is their true value.
/// Prometheus metrics (the text exposition format); open when `orchestrator.metrics_public`.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
pub(super) async fn metrics(State(shared): State<Shared>) -> String {
    // Live: a heartbeat within `live_window` — so a stopped orchestrator, or a
    // `tasker-orchestrator token` command's brief row, hands over quickly.
    let live = crate::sweeper::live_window(&shared.config);
    let reports = match shared.store.is_eldest(live).await {
        Ok(eldest) => eldest,
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot tell which orchestrator reports the cluster's gauges");
            false
        }
    };
    if !reports {
        return without_families(
            &tasker_shared::metric::render(crate::metrics::handle()),
            &crate::metrics::CLUSTER_GAUGES,
        );
    }
    cluster_gauges(&shared).await;
    tasker_shared::metric::render(crate::metrics::handle())
}

/// Counts the cluster's gauges from the database.
async fn cluster_gauges(shared: &Shared) {
    // On the replica, when there is one: a gauge may lag a scrape.
    let store = shared.reads.lagging(&shared.store);
    // Gauges of timers read at the scrape (two counts on partial indexes), not at every tick.
    match store.waiting_counts().await {
        Ok((waiting, scheduled)) => {
            ::metrics::gauge!(crate::metrics::STEPS_WAITING.name).set(waiting as f64);
            ::metrics::gauge!(crate::metrics::TASKS_SCHEDULED.name).set(scheduled as f64);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: cannot count waiting steps"),
    }
    if let Err(e) = worker_gauges(store).await {
        tracing::warn!(error = %e, "metrics: cannot count workers and unserved steps");
    }
    if let Err(e) = task_gauges(store).await {
        tracing::warn!(error = %e, "metrics: cannot count open tasks");
    }
    if let Err(e) = flow_gauges(store).await {
        tracing::warn!(error = %e, "metrics: cannot count concurrency slots and throttled steps");
    }
}

/// A Prometheus text page without the metric families named (their help, type and samples).
fn without_families(page: &str, families: &[&str]) -> String {
    let named = |line: &str| {
        let name = line
            .strip_prefix("# HELP ")
            .or_else(|| line.strip_prefix("# TYPE "))
            .unwrap_or(line);
        families.iter().any(|f| {
            name.strip_prefix(f)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        })
    };
    let mut out = String::with_capacity(page.len());
    for line in page.lines().filter(|l| !named(l)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One gauge's label values: (label name, value) pairs.
type Labels = Vec<(&'static str, String)>;

/// The label sets each gauge was set for at an earlier scrape, by gauge name.
static SEEN: std::sync::Mutex<Option<HashMap<&'static str, HashSet<Labels>>>> =
    std::sync::Mutex::new(None);

/// Sets gauge `name` to each of `values` (by label set), and to 0 for the label sets an
/// earlier scrape set that are absent now (so a namespace whose count fell to none reads 0,
/// not its last value).
fn set_gauges(name: &'static str, values: HashMap<Labels, i64>) {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen
        .get_or_insert_with(Default::default)
        .entry(name)
        .or_default();
    for gone in seen.iter().filter(|l| !values.contains_key(*l)) {
        ::metrics::gauge!(name, gone.as_slice()).set(0.0);
    }
    for (labels, n) in values {
        ::metrics::gauge!(name, labels.as_slice()).set(n as f64);
        seen.insert(labels);
    }
}

/// Live workers by language; steps waiting for a worker by namespace, those of them a worker
/// reported running, and those no live worker serves.
async fn worker_gauges(store: &Store) -> Result<(), crate::store::Error> {
    let workers = store.workers(false).await?;
    let served = crate::store::Served::new(&workers);
    let mut live: HashMap<Labels, i64> = HashMap::new();
    for w in &workers {
        // The language a worker reports is any text: a label takes one of the four, or
        // `other`, so no report can grow the series without bound.
        let language = match w.language.as_str() {
            l @ ("rust" | "python" | "ruby" | "typescript") => l,
            _ => "other",
        };
        *live
            .entry(vec![("language", language.to_owned())])
            .or_default() += 1;
    }
    let mut enqueued: HashMap<Labels, i64> = HashMap::new();
    let mut unserved: HashMap<Labels, i64> = HashMap::new();
    let mut running: HashMap<Labels, i64> = HashMap::new();
    for (namespace, handler, n, on_workers) in store.waiting_for_workers().await? {
        let labels = vec![("namespace", namespace.clone())];
        *enqueued.entry(labels.clone()).or_default() += n;
        *running.entry(labels.clone()).or_default() += on_workers;
        let count = unserved.entry(labels).or_default();
        if !served.serves(&namespace, &handler) {
            *count += n;
        }
    }
    set_gauges(crate::metrics::WORKERS_LIVE.name, live);
    set_gauges(crate::metrics::STEPS_ENQUEUED.name, enqueued);
    set_gauges(crate::metrics::STEPS_UNSERVED.name, unserved);
    set_gauges(crate::metrics::STEPS_RUNNING.name, running);
    Ok(())
}

/// Tasks not yet finished by namespace and state.
async fn task_gauges(store: &Store) -> Result<(), crate::store::Error> {
    let open = store
        .open_tasks()
        .await?
        .into_iter()
        .map(|(namespace, state, n)| (vec![("namespace", namespace), ("state", state)], n))
        .collect();
    set_gauges(crate::metrics::TASKS_OPEN.name, open);
    Ok(())
}

/// Concurrency slots in use by scope and throttled steps by kind.
async fn flow_gauges(store: &Store) -> Result<(), crate::store::Error> {
    let (slots, throttled) = store.flow_counts().await?;
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
    set_gauges(
        crate::metrics::SLOTS_IN_USE.name,
        slots
            .into_iter()
            .map(|(scope, n)| (vec![("scope", scope)], n))
            .collect(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::without_families;

    #[test]
    fn a_page_without_families_keeps_every_other_line() {
        let page = "# HELP tasker_tasks_open Tasks.\n# TYPE tasker_tasks_open gauge\n\
                    tasker_tasks_open{namespace=\"a\",state=\"running\"} 3\n\
                    # HELP tasker_tasks_opened_total Other.\n\
                    tasker_tasks_opened_total 1\ntasker_steps_waiting 2\n";
        assert_eq!(
            without_families(page, &["tasker_tasks_open", "tasker_steps_waiting"]),
            "# HELP tasker_tasks_opened_total Other.\ntasker_tasks_opened_total 1\n"
        );
    }
}
