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
use super::{Error, json_body, page_limit};

/// The cursors of these lists: where a page ends in their order (when last used, key).
mod page {
    use chrono::{DateTime, SecondsFormat, Utc};

    use super::Error;

    fn bad() -> Error {
        Error::bad_request("invalid_query", "`after` is the `next` of a previous page")
    }

    /// `<used at>|<key>`.
    pub(super) fn next(at: DateTime<Utc>, key: &str) -> String {
        format!("{}|{key}", at.to_rfc3339_opts(SecondsFormat::Micros, true))
    }

    pub(super) fn cursor(text: &str) -> Result<(DateTime<Utc>, &str), Error> {
        let (at, key) = text.split_once('|').ok_or_else(bad)?;
        let at = DateTime::parse_from_rfc3339(at).map_err(|_| bad())?;
        Ok((at.with_timezone(&Utc), key))
    }

    /// `<1 in use, else 0>|<used at>|<key>`.
    pub(super) fn busy_next(busy: bool, at: DateTime<Utc>, key: &str) -> String {
        format!("{}|{}", u8::from(busy), next(at, key))
    }

    pub(super) fn busy_cursor(text: &str) -> Result<(bool, DateTime<Utc>, &str), Error> {
        let (busy, rest) = text.split_once('|').ok_or_else(bad)?;
        let (at, key) = cursor(rest)?;
        Ok((busy == "1", at, key))
    }
}
use crate::shared::Shared;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct KeyQuery {
    /// Only keys starting with this (`shop/charge:` for one template's).
    key: Option<String>,
    /// Keys per page: 1 to 1,000, 500 by default.
    limit: Option<i64>,
    /// The previous page's `next`.
    after: Option<String>,
}

/// The concurrency keys: those with slots in use or steps waiting first, then the most
/// recently used, a page at a time (follow `next`). A token scoped to namespaces sees its
/// namespaces' keys.
#[utoipa::path(get, path = "/v1/concurrency-limits", tag = "limits",
    operation_id = "list_concurrency_limits", params(KeyQuery),
    responses(
        (status = 200, body = ConcurrencyLimitList),
        (status = 400, description = "`invalid_query`, `invalid_limit`", body = ErrorBody),
        (status = 503, description = "`query_timeout`: the query ran past `orchestrator.list_timeout_ms`", body = ErrorBody),
    ))]
pub(super) async fn concurrency(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<KeyQuery>,
) -> Result<Json<ConcurrencyLimitList>, Error> {
    let limit = page_limit(q.limit)?;
    let after = q.after.as_deref().map(page::busy_cursor).transpose()?;
    let page = shared
        .store
        .concurrency_limits(q.key.as_deref(), after, limit)
        .await?;
    let next = (page.len() as i64 == limit)
        .then(|| {
            page.last()
                .map(|l| page::busy_next(l.in_use > 0, l.used_at, &l.key))
        })
        .flatten();
    let limits = page
        .into_iter()
        // A key starts with its template's namespace: `<namespace>/<template>…:<value>`.
        .filter(|l| caller.covers(l.key.split('/').next().unwrap_or_default()))
        .collect();
    Ok(Json(ConcurrencyLimitList { limits, next }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct RatePageQuery {
    /// Keys per page: 1 to 1,000, 500 by default.
    limit: Option<i64>,
    /// The previous page's `next`.
    after: Option<String>,
}

/// The rate keys, most recently used first, with their pauses, a page at a time (follow
/// `next`). A token scoped to namespaces sees its namespaces' keys: those read from their
/// tasks' contexts (`<namespace>/<value>`) and the named keys their templates name.
#[utoipa::path(get, path = "/v1/rate-limits", tag = "limits", operation_id = "list_rate_limits",
    params(RatePageQuery),
    responses(
        (status = 200, body = RateLimitList),
        (status = 400, description = "`invalid_query`, `invalid_limit`", body = ErrorBody),
        (status = 503, description = "`query_timeout`: the query ran past `orchestrator.list_timeout_ms`", body = ErrorBody),
    ))]
pub(super) async fn rates(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<RatePageQuery>,
) -> Result<Json<RateLimitList>, Error> {
    let limit = page_limit(q.limit)?;
    let after = q.after.as_deref().map(page::cursor).transpose()?;
    let namespaces = caller.namespace_regex();
    let limits = shared
        .store
        .rate_limits(namespaces.as_deref(), after, limit)
        .await?;
    let next = (limits.len() as i64 == limit)
        .then(|| limits.last().map(|l| page::next(l.used_at, &l.key)))
        .flatten();
    Ok(Json(RateLimitList { limits, next }))
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
    let now = shared.store.clock().now();
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
