//! The audit log at the API's edge (`crate::audit`): [`record`], the layer that gives every
//! request to a route that changes something its audit row, and `GET /v1/audit`, which reads
//! the rows back.
//!
//! [`record`] sits outside the token check, so a request refused for its token (401) or its
//! scope (403) leaves a row as well, and inside `run_to_completion`, so a request whose client
//! hung up still leaves one. What its handling learns on the way goes into the request's
//! [`Note`]: the token (the token check), each namespace the caller is checked against
//! (`Caller::check`), and what a handler names (the task it created, the template it
//! registered, ...). The route's path parameters are its first targets.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use tasker_shared::api::{AuditPage, ErrorBody};

use super::access::Caller;
use super::extract::Query;
use super::tasks::parse_time;
use super::{Error, check_filter, check_limit};
use crate::audit::{Entry, Note, clean};
use crate::shared::Shared;
use crate::store::AuditFilter;

/// The layer (a route layer: the route is known): every method but GET and HEAD is audited.
pub(super) async fn record(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    let method = match *req.method() {
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::GET | Method::HEAD => return next.run(req).await,
        _ => "other",
    };
    let at = chrono::Utc::now();
    let (mut parts, body) = req.into_parts();
    let route = parts
        .extensions
        .get::<MatchedPath>()
        .map_or_else(String::new, |p| p.as_str().to_owned());
    let note = Note::recording();
    if let Ok(params) = RawPathParams::from_request_parts(&mut parts, &shared).await {
        path_targets(&route, &params, &note);
    }
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let forwarded_for = if shared.config.orchestrator.audit_forwarded_for {
        parts
            .headers
            .get("x-forwarded-for")
            .map(|v| clean(&String::from_utf8_lossy(v.as_bytes())))
    } else {
        None
    };
    parts.extensions.insert(note.clone());
    let response = next.run(Request::from_parts(parts, body)).await;
    let mut entry = Entry {
        at,
        method,
        route,
        status: response.status().as_u16(),
        peer,
        forwarded_for,
        ..Entry::default()
    };
    note.fill(&mut entry);
    shared.audit.record(entry);
    response
}

/// A route's path parameters as its targets, named for what they are in that route: a task's
/// id (the row's `task_id`), a step, a signal, a schedule (its namespace among the row's
/// namespaces), a token's name, a dead letter's id, a worker's id, a rate key.
fn path_targets(route: &str, params: &RawPathParams, note: &Note) {
    let family = route.split('/').nth(2).unwrap_or_default();
    let (mut namespace, mut name) = (None, None);
    for (key, value) in params {
        match (family, key) {
            ("tasks", "id") => match Uuid::parse_str(value) {
                Ok(id) => note.task(id),
                Err(_) => note.target("task", value),
            },
            ("tasks", "name") => note.target("signal", value),
            ("schedules", "namespace") => {
                note.namespace(value);
                namespace = Some(value);
            }
            ("schedules", "name") => name = Some(value),
            ("tokens", "name") => note.target("token", value),
            ("dead-letters", "id") => match value.parse::<i64>() {
                Ok(id) => note.target("dead_letter", id),
                Err(_) => note.target("dead_letter", value),
            },
            ("workers", "id") => note.target("worker", value),
            ("rate-limits", "key") => note.target("rate_key", value),
            (_, key) => note.target(key, value),
        }
    }
    if let (Some(namespace), Some(name)) = (namespace, name) {
        note.target("schedule", format!("{namespace}/{name}"));
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Rows naming this namespace.
    namespace: Option<String>,
    /// Rows of the token of this name.
    token: Option<String>,
    /// Rows of this route pattern (`/v1/tasks/{id}/cancel`).
    route: Option<String>,
    /// Rows of this method (`POST`, `PUT`, `PATCH`, `DELETE`).
    method: Option<String>,
    /// Requests that arrived at or after this time (RFC 3339).
    since: Option<String>,
    /// Requests that arrived before this time (RFC 3339).
    until: Option<String>,
    /// 1 to 500, 50 by default.
    limit: Option<i64>,
    /// The previous page's `next_before`.
    before: Option<i64>,
}

/// `GET /v1/audit`: the audit log, newest first, a page at a time (`?limit=`, `&before=ID`),
/// filtered by namespace, token, route, method and time. A token scoped to namespaces sees
/// the rows that name namespaces, all of them its own.
#[utoipa::path(get, path = "/v1/audit", operation_id = "list_audit", tag = "audit", params(ListQuery),
    responses(
        (status = 200, body = AuditPage),
        (status = 400, description = "`invalid_limit`, `invalid_time`, `invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin token, or `namespace` is one the token does not cover", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<AuditPage>, Error> {
    for (field, value) in [
        ("namespace", &q.namespace),
        ("token", &q.token),
        ("route", &q.route),
        ("method", &q.method),
    ] {
        check_filter(field, value.as_deref())?;
    }
    if let Some(ns) = &q.namespace {
        caller.check(ns)?;
    }
    let limit = check_limit(q.limit)?;
    let entries = shared
        .store
        .audit(&AuditFilter {
            namespace: q.namespace,
            token: q.token,
            route: q.route,
            method: q.method.map(|m| m.to_ascii_uppercase()),
            since: parse_time("since", q.since.as_deref())?,
            until: parse_time("until", q.until.as_deref())?,
            namespaces: caller.namespace_regex(),
            before: q.before,
            limit,
        })
        .await?;
    let next_before = (entries.len() as i64 == limit)
        .then(|| entries.last().map(|e| e.id))
        .flatten();
    Ok(Json(AuditPage {
        entries,
        next_before,
    }))
}
