//! Webhooks: saved by name (`PUT /v1/webhooks/{name}`) into a namespace the token covers,
//! listed, shown and removed by tokens covering theirs. The secret is answered only by the
//! `PUT` that made it. What a webhook receives is `webhook_receive`'s.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use tasker_shared::api::{ErrorBody, PutWebhook, Webhook, WebhookFormat, WebhookList};
use tasker_shared::names::identifier_problem;
use tasker_shared::time::{is_signal_name, parse_duration};

use super::access::Caller;
use super::extract::Path;
use super::{Error, json_body, saved};
use crate::shared::Shared;
use crate::store::NewWebhook;

/// Creates the webhook `name`, or replaces the whole of it (its counts stay, and its secret
/// unless a new one is given). Its requests become events of `namespace`, judged with the
/// token that saved it.
#[utoipa::path(put, path = "/v1/webhooks/{name}", operation_id = "put_webhook", tag = "events",
    params(("name" = String, Path, description = "1 to 128 ASCII letters, digits, `_`, `-` and `.`: the last part of its URL")),
    request_body = PutWebhook,
    responses(
        (status = 201, description = "Created; `secret` is the one Tasker made, if none was given (shown this once)", body = Webhook),
        (status = 200, description = "Replaced", body = Webhook),
        (status = 400, description = "`invalid_json`, `invalid_webhook` (details: field, problem)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace, or the namespace of the webhook it would replace", body = ErrorBody),
    ))]
pub(super) async fn put(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let req: PutWebhook = json_body(&shared, body)?;
    caller.audit().target("webhook", name.as_str());
    caller.check(&req.namespace)?;
    let tolerance = check(&name, &req)?;
    let existing = shared.store.webhook(&name).await?;
    if let Some(old) = &existing {
        caller.check(&old.view.namespace)?;
    }
    let made = match (&req.secret, &existing) {
        (None, None) => Some(new_secret("whk_")?),
        _ => None,
    };
    let (row, created) = shared
        .store
        .put_webhook(&NewWebhook {
            name: &name,
            namespace: &req.namespace,
            format: req.format,
            secret: made.as_deref().or(req.secret.as_deref()),
            event: req.event.as_deref(),
            key: req.key.as_deref(),
            id: req.id.as_deref(),
            tolerance_seconds: tolerance,
            token_id: caller.token_id(),
        })
        .await?;
    tracing::info!(webhook = %name, namespace = %req.namespace, created, "webhook saved");
    let mut view = row.view;
    view.secret = made;
    Ok(saved(view, created))
}

/// `GET /v1/webhooks`: the webhooks of the namespaces the token covers, by name.
#[utoipa::path(get, path = "/v1/webhooks", operation_id = "list_webhooks", tag = "events",
    responses((status = 200, body = WebhookList)))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
) -> Result<Json<WebhookList>, Error> {
    let webhooks = shared
        .store
        .webhooks(caller.namespace_regex().as_deref())
        .await?;
    Ok(Json(WebhookList { webhooks }))
}

/// `GET /v1/webhooks/{name}`: a webhook, without its secret.
#[utoipa::path(get, path = "/v1/webhooks/{name}", operation_id = "get_webhook", tag = "events",
    params(("name" = String, Path, description = "The webhook's name")),
    responses(
        (status = 200, body = Webhook),
        (status = 403, description = "`forbidden`: the token does not cover its namespace", body = ErrorBody),
        (status = 404, description = "`webhook_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Webhook>, Error> {
    let row = found(&shared, &name).await?;
    caller.check(&row.namespace)?;
    Ok(Json(row))
}

/// `DELETE /v1/webhooks/{name}`: its URL answers `404 webhook_not_found` from now on.
#[utoipa::path(delete, path = "/v1/webhooks/{name}", operation_id = "delete_webhook", tag = "events",
    params(("name" = String, Path, description = "The webhook's name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "`forbidden`: the token does not cover its namespace", body = ErrorBody),
        (status = 404, description = "`webhook_not_found`", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    caller.audit().target("webhook", name.as_str());
    let row = found(&shared, &name).await?;
    caller.check(&row.namespace)?;
    shared.store.delete_webhook(&name).await?;
    tracing::info!(webhook = %name, "webhook removed");
    Ok(StatusCode::NO_CONTENT)
}

pub(super) fn not_found(name: &str) -> Error {
    Error::not_found("webhook_not_found", format!("no webhook {name:?}"))
}

async fn found(shared: &Shared, name: &str) -> Result<Webhook, Error> {
    Ok(shared
        .store
        .webhook(name)
        .await?
        .ok_or_else(|| not_found(name))?
        .view)
}

/// A webhook's checks; its replay window in seconds.
fn check(name: &str, req: &PutWebhook) -> Result<i32, Error> {
    let invalid = |field: &str, problem: String| {
        Error::bad_request("invalid_webhook", format!("`{field}` {problem}"))
            .with_details(json!({ "field": field, "problem": problem }))
    };
    if let Some(problem) = identifier_problem(name) {
        return Err(invalid("name", problem.to_owned()));
    }
    if let Some(s) = &req.secret
        && (s.len() < 16 || s.len() > 256 || s.chars().any(char::is_control))
    {
        return Err(invalid(
            "secret",
            "must be 16 to 256 characters, none of them control characters".into(),
        ));
    }
    if req.event.is_none() && req.format == WebhookFormat::Generic && !is_signal_name(name) {
        return Err(invalid(
            "event",
            "is needed: the webhook's name is not an event name (1 to 64 ASCII letters, digits, `_`, `-` or `.`)".into(),
        ));
    }
    if let Some(e) = &req.event
        && !is_signal_name(e)
    {
        return Err(invalid(
            "event",
            "must be 1 to 64 ASCII letters, digits, `_`, `-` or `.`".into(),
        ));
    }
    for (field, pointer) in [("key", &req.key), ("id", &req.id)] {
        if let Some(p) = pointer
            && tasker_shared::json_check::pointer_path(p).is_none()
        {
            return Err(invalid(
                field,
                format!("must be a JSON pointer into the body, such as \"/data/id\" (got {p:?})"),
            ));
        }
    }
    let tolerance = match &req.tolerance {
        None => 300,
        Some(t) => parse_duration("tolerance", t)
            .map_err(|e| invalid("tolerance", e.problem.clone()))?
            .as_secs(),
    };
    if !(1..=3600).contains(&tolerance) {
        return Err(invalid("tolerance", "must be 1s to 1h".into()));
    }
    Ok(tolerance as i32)
}

/// A secret for a webhook (or an alert rule's webhook sink) saved without one: `prefix` and 32
/// random bytes, hex.
pub(super) fn new_secret(prefix: &str) -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("no randomness for a secret: {e}"),
        )
    })?;
    Ok(format!("{prefix}{}", hex::encode(bytes)))
}
