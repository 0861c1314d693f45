//! Fair sharing's keys: the concurrency keys with their slots in use and steps waiting, and the
//! rate keys, which an operator may pause (say after a provider answered 429) and resume.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use tasker_shared::api::{
    ConcurrencyLimitList, ErrorBody, PauseRateLimit, RateLimit, RateLimitList,
};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, json_body};
use crate::shared::Shared;

/// Most concurrency keys one list answers.
const MAX_KEYS: i64 = 1000;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct KeyQuery {
    /// Only keys starting with this (`shop/charge:` for one template's).
    key: Option<String>,
}

/// The concurrency keys: those with slots in use or steps waiting first, then the most
/// recently used (at most 1,000). A token scoped to namespaces sees its namespaces' keys.
#[utoipa::path(get, path = "/v1/concurrency-limits", tag = "limits",
    operation_id = "list_concurrency_limits", params(KeyQuery),
    responses(
        (status = 200, body = ConcurrencyLimitList),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub(super) async fn concurrency(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<KeyQuery>,
) -> Result<Json<ConcurrencyLimitList>, Error> {
    let limits = shared
        .store
        .concurrency_limits(q.key.as_deref(), MAX_KEYS)
        .await?
        .into_iter()
        // A key starts with its template's namespace: `<namespace>/<template>…:<value>`.
        .filter(|l| caller.covers(l.key.split('/').next().unwrap_or_default()))
        .collect();
    Ok(Json(ConcurrencyLimitList { limits }))
}

/// The rate keys, most recently used first, with their pauses. A token scoped to namespaces
/// sees its namespaces' keys: those read from their tasks' contexts (`<namespace>/<value>`)
/// and the named keys their templates name.
#[utoipa::path(get, path = "/v1/rate-limits", tag = "limits", operation_id = "list_rate_limits",
    responses((status = 200, body = RateLimitList)))]
pub(super) async fn rates(
    State(shared): State<Shared>,
    caller: Caller,
) -> Result<Json<RateLimitList>, Error> {
    Ok(Json(RateLimitList {
        limits: shared
            .store
            .rate_limits(caller.namespace_regex().as_deref())
            .await?,
    }))
}

/// Ok if the caller may pause or resume rate key `key`: one covering the namespace the key
/// belongs to (a key read from a context: its template's; a named key: the namespace that
/// declared it, since pausing it holds every team that names it), or a token of every
/// namespace for a key no namespace declared.
async fn check_key(shared: &Shared, caller: &Caller, key: &str) -> Result<(), Error> {
    match shared.store.rate_key_owner(key).await? {
        Some(namespace) => caller.check(&namespace),
        None => caller.require_unscoped("pausing or resuming a rate key no namespace declared"),
    }
}

/// Pauses a rate key until a time: no step that claims it starts before then (steps already
/// started run on). It takes a token of the key's namespace (a named key's: the namespace that
/// declared it).
#[utoipa::path(post, path = "/v1/rate-limits/{key}/pause", tag = "limits",
    operation_id = "pause_rate_limit",
    params(("key" = String, Path, description = "The rate key (URL-encoded)")),
    request_body = PauseRateLimit,
    responses(
        (status = 200, body = RateLimit),
        (status = 400, description = "`invalid_json`, `invalid_until` (not in the future, or more than a year ahead), `invalid_note` (over 1,000 characters)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the key's namespace (a named key's: the one that declared it)", body = ErrorBody),
        (status = 404, description = "`unknown_rate_limit`: no step ever claimed this key", body = ErrorBody),
    ))]
pub(super) async fn pause(
    State(shared): State<Shared>,
    caller: Caller,
    Path(key): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<RateLimit>, Error> {
    let req: PauseRateLimit = json_body(&shared, body)?;
    check_key(&shared, &caller, &key).await?;
    let now = chrono::Utc::now();
    if req.until <= now || req.until > now + chrono::Duration::days(365) {
        return Err(Error::new(
            StatusCode::BAD_REQUEST,
            "invalid_until",
            format!(
                "`until` must be in the future and at most a year ahead (got {})",
                req.until.to_rfc3339()
            ),
        ));
    }
    if req.note.as_ref().is_some_and(|n| n.chars().count() > 1000) {
        return Err(Error::new(
            StatusCode::BAD_REQUEST,
            "invalid_note",
            "`note` must be at most 1,000 characters",
        ));
    }
    let by = caller.principal().map(|p| p.name.as_str());
    let paused = shared
        .store
        .pause_rate_limit(&key, req.until, req.note.as_deref(), by)
        .await?
        .ok_or_else(|| unknown(&key))?;
    ::metrics::counter!(crate::metrics::RATE_LIMIT_PAUSES.name).increment(1);
    tracing::info!(key = %key, until = %req.until, by, "rate key paused");
    Ok(Json(paused))
}

/// Ends a rate key's pause now: the steps it held start as their tokens allow.
#[utoipa::path(delete, path = "/v1/rate-limits/{key}/pause", tag = "limits",
    operation_id = "resume_rate_limit",
    params(("key" = String, Path, description = "The rate key (URL-encoded)")),
    responses(
        (status = 200, body = RateLimit),
        (status = 403, description = "`forbidden`: the token does not cover the key's namespace (a named key's: the one that declared it)", body = ErrorBody),
        (status = 404, description = "`unknown_rate_limit`: no step ever claimed this key", body = ErrorBody),
    ))]
pub(super) async fn resume(
    State(shared): State<Shared>,
    caller: Caller,
    Path(key): Path<String>,
) -> Result<Json<RateLimit>, Error> {
    check_key(&shared, &caller, &key).await?;
    let resumed = shared
        .store
        .resume_rate_limit(&key)
        .await?
        .ok_or_else(|| unknown(&key))?;
    tracing::info!(key = %key, "rate key resumed");
    Ok(Json(resumed))
}

fn unknown(key: &str) -> Error {
    Error::new(
        StatusCode::NOT_FOUND,
        "unknown_rate_limit",
        format!("no step ever claimed the rate key {key:?}"),
    )
}
