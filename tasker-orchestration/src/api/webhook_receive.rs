//! `POST /v1/webhooks/{name}`: a request another service signed, turned into an event. The
//! route takes no token: the signature, checked against the webhook's secret before anything
//! is read or written, is its only credential, and the event is then judged with the token
//! that saved the webhook, looked up again for each request (revoked or expired: refused).

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use tasker_shared::api::{ErrorBody, Event, SendEvent, WebhookFormat};

use super::access::Caller;
use super::event_starts::record;
use super::extract::Path;
use super::{Error, request_body};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::WebhookRow;
use crate::webhook_sign::{Refusal, verify};

/// Receives a signed request: its body (a JSON object) becomes the data of an event of the
/// webhook's namespace, stored and matched against triggers as `POST /v1/events` would.
/// Takes no token; a signature that does not verify is 401 and stores nothing.
#[utoipa::path(post, path = "/v1/webhooks/{name}", operation_id = "receive_webhook", tag = "events",
    security(()),
    params(("name" = String, Path, description = "The webhook's name")),
    request_body(content = Object, description = "The sender's JSON object, byte for byte as it was signed"),
    responses(
        (status = 201, description = "The event it made, with what that started", body = Event),
        (status = 200, description = "Its id (GitHub's delivery, Stripe's event id, the `id` pointer) was received before: the stored event", body = Event),
        (status = 400, description = "`invalid_json` (not a JSON object), `invalid_event_name` (no event name in the request), `invalid_event_key`, `invalid_event_id`, `invalid_event_data`", body = ErrorBody),
        (status = 401, description = "`bad_signature`: no signature this webhook's secret made; `stale_signature`: signed outside the replay window", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token that saved the webhook was revoked, has expired, or does not cover what the event would start", body = ErrorBody),
        (status = 404, description = "`webhook_not_found`", body = ErrorBody),
    ))]
pub(super) async fn receive(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let answer = receive_inner(&shared, caller, &name, &headers, body).await;
    let outcome = match &answer {
        Ok(_) => "accepted",
        Err(e) => match e.code() {
            "bad_signature" | "stale_signature" => e.code(),
            "webhook_not_found" => "unknown",
            _ => "refused",
        },
    };
    ::metrics::counter!(m::WEBHOOKS_RECEIVED.name, "outcome" => outcome).increment(1);
    answer
}

async fn receive_inner(
    shared: &Shared,
    caller: Caller,
    name: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    caller.audit().target("webhook", name);
    let body = request_body(shared, body)?;
    let hook = shared
        .store
        .webhook(name)
        .await?
        .ok_or_else(|| super::webhooks::not_found(name))?;
    let now = chrono::Utc::now().timestamp();
    let tolerance = hook.view.tolerance_seconds;
    verify(
        hook.view.format,
        &hook.secret,
        headers,
        &body,
        now,
        tolerance,
    )
    .map_err(|r| {
        let (code, message) = match r {
            Refusal::Bad(m) => ("bad_signature", m),
            Refusal::Stale(m) => ("stale_signature", m),
        };
        tracing::info!(webhook = %name, code, %message, "webhook request refused");
        Error::new(StatusCode::UNAUTHORIZED, code, message)
    })?;
    let caller = caller.acting_for(saver(shared, &hook).await?);
    let req = event_of(&hook, headers, &body)?;
    let checked = super::events::check(shared, &caller, req)?;
    let stored = record(shared, &caller, vec![checked]).await?;
    shared.store.webhook_received(name).await?;
    super::events::answer(stored)
}

/// The live token that saved `hook`, when the orchestrator requires tokens.
async fn saver(
    shared: &Shared,
    hook: &WebhookRow,
) -> Result<Option<crate::store::Principal>, Error> {
    if !shared.auth_required() {
        return Ok(None);
    }
    let revoked = || {
        Error::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "the token that saved webhook {:?} was revoked or has expired: save it again",
                hook.view.name
            ),
        )
    };
    let Some(id) = hook.token_id else {
        return Err(revoked());
    };
    shared
        .store
        .principal_by_id(id)
        .await?
        .ok_or_else(revoked)
        .map(Some)
}

/// The event a verified request makes: its body is the data; the name, key and id come from
/// the webhook's settings, else from its format.
fn event_of(hook: &WebhookRow, headers: &HeaderMap, body: &[u8]) -> Result<SendEvent, Error> {
    let data: Value = serde_json::from_slice(body)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| Error::bad_request("invalid_json", "the body must be a JSON object"))?;
    let header = |h: &str| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let at = |pointer: &str, code: &'static str| -> Result<Option<String>, Error> {
        match data.pointer(pointer) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(Error::bad_request(
                code,
                format!("{pointer} of the body is neither a string nor a number"),
            )),
        }
    };
    let v = &hook.view;
    let format = v.format;
    let name = match (&v.event, format) {
        (Some(e), _) => Some(e.clone()),
        (None, WebhookFormat::Generic) => Some(v.name.clone()),
        (None, WebhookFormat::Github) => header("x-github-event").map(|e| format!("github.{e}")),
        (None, WebhookFormat::Stripe) => at("/type", "invalid_event_name")?.map(|t| format!("stripe.{t}")),
    }
    .ok_or_else(|| {
        Error::bad_request(
            "invalid_event_name",
            format!("the request names no event (the {} format reads it from {}); set the webhook's `event`",
                format.as_str(),
                if format == WebhookFormat::Github { "`X-GitHub-Event`" } else { "/type" }),
        )
    })?;
    let key = v
        .key
        .as_deref()
        .map(|p| at(p, "invalid_event_key"))
        .transpose()?
        .flatten();
    let id = match (&v.id, format) {
        (Some(p), _) => at(p, "invalid_event_id")?,
        (None, WebhookFormat::Github) => header("x-github-delivery"),
        (None, WebhookFormat::Stripe) => at("/id", "invalid_event_id")?,
        (None, WebhookFormat::Generic) => None,
    };
    Ok(SendEvent {
        namespace: v.namespace.clone(),
        name,
        data: Some(data),
        key,
        id,
    })
}
