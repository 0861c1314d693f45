//! API tokens: when the orchestrator requires them (`orchestrator.auth`), every route but
//! `/health` and `/ready` (and `/metrics` when `metrics_public`) needs `Authorization: Bearer
//! <token>` with a scope that covers it; 401 `unauthenticated` or 403 `forbidden` otherwise.
//! The holder ([`Principal`]) goes into the request's extensions (repairs record it).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tasker_shared::api::{CreatedToken, ErrorBody, NewToken, TokenList};

use tasker_shared::namespaces::Patterns;

use super::access::Caller;
use super::extract::Path;
use super::{Error, json_body};
use crate::shared::Shared;
use crate::store::{CreateError, Scope};

/// The scope a request needs, by method and route; `None`: open.
pub(super) fn needed(method: &Method, route: Option<&str>, metrics_public: bool) -> Option<Scope> {
    match route {
        Some(
            "/health" | "/ready" | "/openapi.json" | "/" | "/ui" | "/ui/" | "/ui/app.js"
            | "/ui/app.css",
        ) => None,
        Some("/metrics") if metrics_public => None,
        // A webhook's sender has no token: its signature is checked instead (webhook_receive).
        Some("/v1/webhooks/{name}") if method == Method::POST => None,
        Some(
            "/v1/dead-letters/{id}/replay"
            | "/v1/tokens"
            | "/v1/tokens/{name}"
            | "/v1/purge"
            | "/v1/clock/advance"
            | "/v1/clock/skip",
        ) => Some(Scope::Admin),
        // Who did what, of every namespace the token covers.
        Some("/v1/audit") => Some(Scope::Admin),
        Some("/v1/dead-letters/{id}") if method == Method::DELETE => Some(Scope::Admin),
        // A rule's sink is called from the orchestrators' network.
        Some("/v1/alerts/{name}") if method != Method::GET && method != Method::HEAD => {
            Some(Scope::Admin)
        }
        _ if method == Method::GET || method == Method::HEAD => Some(Scope::Read),
        _ => Some(Scope::Write),
    }
}

/// The middleware (a route layer: the route is known).
pub(super) async fn require(
    State(shared): State<Shared>,
    mut req: Request,
    next: Next,
) -> Response {
    if !shared.auth_required() {
        return next.run(req).await;
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let Some(scope) = needed(
        req.method(),
        route.as_deref(),
        shared.config.orchestrator.metrics_public,
    ) else {
        return next.run(req).await;
    };
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    let Some(token) = token else {
        return unauthenticated("this route needs `Authorization: Bearer <token>`");
    };
    let principal = match principal(&shared, token).await {
        Ok(Some(p)) => p,
        Ok(None) => return unauthenticated("unknown, revoked or expired token"),
        Err(e) => return e.into_response(),
    };
    // Who asked, for the audit row, refused for its scope or not.
    if let Some(note) = req.extensions().get::<crate::audit::Note>() {
        note.token(principal.id, &principal.name);
    }
    if principal.scope < scope {
        return Error::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "token {:?} has scope {}; this needs {scope}",
                principal.name, principal.scope
            ),
        )
        .with_details(json!({ "scope": principal.scope, "needed": scope }))
        .into_response();
    }
    // What every namespace shares is for tokens of every namespace only.
    if principal.namespaces.is_some() && route.as_deref() == Some("/metrics") {
        return super::access::Caller::from(Some(principal))
            .require_unscoped("`/metrics` (it counts every namespace's work)")
            .map_or_else(IntoResponse::into_response, |()| {
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            });
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// The live holder of `token`: from the tokens seen lately (never past its expiry), else from
/// PostgreSQL. A token that is not even of the form Tasker makes (`tsk_` and 64 hex digits),
/// and one PostgreSQL did not know lately, cost no query.
async fn principal(shared: &Shared, token: &str) -> Result<Option<crate::store::Principal>, Error> {
    let now = chrono::Utc::now();
    if let Some(p) = shared.tokens.get(token) {
        return Ok((!p.expired(now)).then_some(p));
    }
    let well_formed = token.len() == 68
        && token.starts_with("tsk_")
        && token[4..].bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed || shared.unknown_tokens.get(token).is_some() {
        return Ok(None);
    }
    match shared.store.principal(token).await? {
        Some(p) => {
            shared.tokens.put(token, p.clone());
            Ok(Some(p))
        }
        None => {
            shared.unknown_tokens.put(token, ());
            Ok(None)
        }
    }
}

/// The token of an `Authorization` header value: the `Bearer` scheme, in any case (RFC 7235
/// scheme names are case-insensitive), then the token.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Longest lifetime a token may be given: ten years.
const MAX_EXPIRES_IN: u64 = 10 * 365 * 24 * 3600;

/// `POST /v1/tokens` `{name, scope, namespaces?, expires_in_seconds?}` → 201 `{id, name, scope,
/// token, namespaces?, expires_at?}`: the only time the token is shown. A token scoped to
/// namespaces can only create tokens within its own namespaces, and none with a wider scope
/// than its own.
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", request_body = NewToken,
    responses(
        (status = 201, body = CreatedToken),
        (status = 400, description = "`invalid_json`, `invalid_scope`, `invalid_name`, `invalid_namespaces`, `invalid_expiry`", body = ErrorBody),
        (status = 403, description = "`forbidden`: beyond the creating token's own scope or namespaces", body = ErrorBody),
        (status = 409, description = "`token_name_taken`", body = ErrorBody),
    ))]
pub(super) async fn create_token(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let req: NewToken = json_body(&shared, body)?;
    caller.audit().target("token", req.name.as_str());
    for ns in req.namespaces.iter().flatten() {
        caller.audit().namespace(ns);
    }
    let scope = Scope::parse(&req.scope).ok_or_else(|| {
        Error::bad_request(
            "invalid_scope",
            format!("unknown scope {:?}; use read, write or admin", req.scope),
        )
    })?;
    let namespaces = match &req.namespaces {
        None => None,
        Some(list) => Some(
            Patterns::new(list.iter().cloned())
                .map_err(|e| Error::bad_request("invalid_namespaces", e.to_string()))?,
        ),
    };
    let expires_at = match req.expires_in_seconds {
        None => None,
        // To the microsecond, as PostgreSQL keeps it: the answer says what is stored.
        Some(s) if (1..=MAX_EXPIRES_IN).contains(&s) => Some(chrono::SubsecRound::trunc_subsecs(
            chrono::Utc::now() + chrono::Duration::seconds(s as i64),
            6,
        )),
        Some(_) => {
            return Err(Error::bad_request(
                "invalid_expiry",
                format!("`expires_in_seconds` must be between 1 and {MAX_EXPIRES_IN}"),
            ));
        }
    };
    // What the creating token may hand out: no more than it holds.
    let namespaces = caller.grantable(scope, namespaces)?;
    let by = caller.principal().map(|p| format!("token:{}", p.name));
    match shared
        .store
        .create_token(&crate::store::NewToken {
            name: &req.name,
            scope,
            namespaces: namespaces.as_ref(),
            expires_at,
            created_by: by.as_deref(),
            minter: caller.principal(),
        })
        .await
    {
        Ok(minted) => {
            let expires_at = crate::store::lifetime_within(expires_at, caller.principal());
            tracing::info!(name = %req.name, %scope, namespaces = namespaces.as_ref().map(ToString::to_string).as_deref(),
                "API token created");
            if minted.broker_user.is_none() {
                tracing::warn!(name = %req.name, "API token created without a broker user: its \
                    name spoke for a token of namespaces its creator does not cover");
            }
            let created = CreatedToken {
                id: minted.id,
                name: req.name,
                scope: scope.to_string(),
                token: minted.token,
                namespaces: namespaces.map(|p| p.as_slice().to_vec()),
                expires_at,
                broker_user: minted.broker_user,
            };
            Ok((StatusCode::CREATED, Json(created)).into_response())
        }
        Err(CreateError::NameTaken(_)) => Err(Error::new(
            StatusCode::CONFLICT,
            "token_name_taken",
            format!(
                "a token named {:?} exists; revoke it first or choose another name",
                req.name
            ),
        )),
        Err(e @ CreateError::InvalidName) => Err(Error::bad_request("invalid_name", e.to_string())),
        Err(e @ CreateError::NoRandomness(_)) => {
            tracing::error!(error = %e, "creating a token failed");
            Err(Error::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; the server log has the details",
            ))
        }
        Err(CreateError::Store(e)) => Err(e.into()),
    }
}

/// `GET /v1/tokens`: live tokens (never the tokens themselves); a token scoped to namespaces
/// sees those within its namespaces.
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens", responses((status = 200, body = TokenList)))]
pub(super) async fn list_tokens(
    State(shared): State<Shared>,
    caller: Caller,
) -> Result<Json<TokenList>, Error> {
    let mut tokens = shared.store.tokens().await?;
    tokens.retain(|t| caller.may_manage(t.namespaces.as_deref()));
    Ok(Json(TokenList { tokens }))
}

/// `DELETE /v1/tokens/{name}` → 204; it stops working within a few seconds everywhere.
#[utoipa::path(delete, path = "/v1/tokens/{name}", tag = "tokens",
    params(("name" = String, Path, description = "The token's name")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 404, description = "`token_not_found`", body = ErrorBody),
    ))]
pub(super) async fn revoke_token(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    let live = shared.store.tokens().await?;
    if let Some(t) = live.iter().find(|t| t.name == name)
        && !caller.may_manage(t.namespaces.as_deref())
    {
        return Err(caller.forbidden(format!(
            "token {name:?} covers namespaces beyond this token's"
        )));
    }
    let revoked = shared.store.revoke_token(&name).await?;
    if !revoked.is_empty() {
        shared.tokens.forget(|_, p| revoked.contains(&p.name));
        for name in &revoked {
            shared.senders.forget(name);
        }
        tracing::info!(%name, with = revoked.len() - 1, "API token revoked (and what it minted)");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Error::not_found(
            "token_not_found",
            format!("no live token named {name:?}"),
        ))
    }
}

fn unauthenticated(message: &str) -> Response {
    let mut resp = Error::new(StatusCode::UNAUTHORIZED, "unauthenticated", message).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        assert_eq!(bearer("Bearer tsk_1"), Some("tsk_1"));
        assert_eq!(bearer("bearer tsk_1"), Some("tsk_1"));
        assert_eq!(bearer("BEARER   tsk_1 "), Some("tsk_1"));
        assert_eq!(bearer("Basic dXNlcg=="), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn each_route_needs_the_scope_its_effect_deserves() {
        let get = &Method::GET;
        let post = &Method::POST;
        let delete = &Method::DELETE;
        for (method, route, public, expected) in [
            (get, Some("/health"), false, None),
            (get, Some("/ready"), false, None),
            (get, Some("/ui/app.js"), false, None),
            (get, Some("/metrics"), false, Some(Scope::Read)),
            (get, Some("/metrics"), true, None),
            (get, Some("/v1/tasks"), false, Some(Scope::Read)),
            (post, Some("/v1/tasks"), false, Some(Scope::Write)),
            (
                post,
                Some("/v1/tasks/{id}/retry"),
                false,
                Some(Scope::Write),
            ),
            (post, Some("/v1/templates"), false, Some(Scope::Write)),
            (get, Some("/v1/dead-letters/{id}"), false, Some(Scope::Read)),
            (
                delete,
                Some("/v1/dead-letters/{id}"),
                false,
                Some(Scope::Admin),
            ),
            (
                post,
                Some("/v1/dead-letters/{id}/replay"),
                false,
                Some(Scope::Admin),
            ),
            (post, None, false, Some(Scope::Write)),
            (get, Some("/v1/tokens"), false, Some(Scope::Admin)),
            (delete, Some("/v1/tokens/{name}"), false, Some(Scope::Admin)),
            (get, Some("/v1/audit"), false, Some(Scope::Admin)),
            (get, Some("/v1/clock"), false, Some(Scope::Read)),
            (post, Some("/v1/clock/advance"), false, Some(Scope::Admin)),
            (post, Some("/v1/clock/skip"), false, Some(Scope::Admin)),
        ] {
            assert_eq!(
                needed(method, route, public),
                expected,
                "{method} {route:?}"
            );
        }
        assert!(Scope::Read < Scope::Write && Scope::Write < Scope::Admin);
    }
}
