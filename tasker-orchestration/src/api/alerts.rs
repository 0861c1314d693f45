//! Alert rules: saved by name (`PUT /v1/alerts/{name}`, an admin token covering the namespace:
//! a rule's sink is called from the orchestrators' network) into one namespace, listed, shown
//! and removed by tokens covering theirs. A webhook sink's secret is answered only by the `PUT`
//! that made it. What the rules do is `crate::alerts`'.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use tasker_shared::api::{Alert, AlertList, AlertSink, ErrorBody, PutAlert};
use tasker_shared::names::identifier_problem;
use tasker_shared::time::parse_duration;

use super::access::Caller;
use super::extract::Path;
use super::webhooks::new_secret;
use super::{Error, json_body, saved};
use crate::shared::Shared;
use crate::store::NewAlert;

/// Creates the alert rule `name`, or replaces the whole of it (what it last did stays, and its
/// webhook sink's secret unless a new one is given); it is checked within a second.
#[utoipa::path(put, path = "/v1/alerts/{name}", operation_id = "put_alert", tag = "events",
    params(("name" = String, Path, description = "1 to 128 ASCII letters, digits, `_`, `-` and `.`")),
    request_body = PutAlert,
    responses(
        (status = 201, description = "Created; `secret` is the one Tasker made for a webhook sink, if none was given (shown this once)", body = Alert),
        (status = 200, description = "Replaced", body = Alert),
        (status = 400, description = "`invalid_json`, `invalid_alert` (details: field, problem)", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin token, or it does not cover the namespace, or the namespace of the rule it would replace", body = ErrorBody),
    ))]
pub(super) async fn put(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let req: PutAlert = json_body(&shared, body)?;
    caller.audit().target("alert", name.as_str());
    caller.check(&req.namespace)?;
    let suppress_ms = check(&name, &req, shared.config.alerts.smtp_url.is_some())?;
    let existing = shared.store.alert(&name).await?;
    if let Some(old) = &existing {
        caller.check(&old.view.namespace)?;
    }
    let webhook = matches!(req.sink, AlertSink::Webhook { .. });
    let kept = existing.as_ref().is_some_and(|old| old.secret.is_some());
    let made = match (&req.secret, webhook && !kept) {
        (None, true) => Some(new_secret("whk_")?),
        _ => None,
    };
    let (row, created) = shared
        .store
        .put_alert(&NewAlert {
            name: &name,
            namespace: &req.namespace,
            when: &req.when,
            sink: &req.sink,
            secret: made.as_deref().or(req.secret.as_deref()),
            suppress_ms,
            token_id: caller.token_id(),
        })
        .await?;
    tracing::info!(alert = %name, namespace = %req.namespace, created, "alert rule saved");
    let mut view = row.view;
    view.secret = made;
    Ok(saved(view, created))
}

/// `GET /v1/alerts`: the alert rules of the namespaces the token covers, by name, with what
/// each last did.
#[utoipa::path(get, path = "/v1/alerts", operation_id = "list_alerts", tag = "events",
    responses((status = 200, body = AlertList)))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
) -> Result<Json<AlertList>, Error> {
    let alerts = shared
        .store
        .alerts(caller.namespace_regex().as_deref())
        .await?;
    Ok(Json(AlertList { alerts }))
}

/// `GET /v1/alerts/{name}`: an alert rule and what it last did, without its secret.
#[utoipa::path(get, path = "/v1/alerts/{name}", operation_id = "get_alert", tag = "events",
    params(("name" = String, Path, description = "The rule's name")),
    responses(
        (status = 200, body = Alert),
        (status = 403, description = "`forbidden`: the token does not cover its namespace", body = ErrorBody),
        (status = 404, description = "`alert_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Alert>, Error> {
    let row = found(&shared, &name).await?;
    caller.check(&row.namespace)?;
    Ok(Json(row))
}

/// `DELETE /v1/alerts/{name}`: the rule is checked no more, and its notices not sent yet go.
#[utoipa::path(delete, path = "/v1/alerts/{name}", operation_id = "delete_alert", tag = "events",
    params(("name" = String, Path, description = "The rule's name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "`forbidden`: not an admin token, or it does not cover its namespace", body = ErrorBody),
        (status = 404, description = "`alert_not_found`", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(shared): State<Shared>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    caller.audit().target("alert", name.as_str());
    let row = found(&shared, &name).await?;
    caller.check(&row.namespace)?;
    shared.store.delete_alert(&name).await?;
    tracing::info!(alert = %name, "alert rule removed");
    Ok(StatusCode::NO_CONTENT)
}

async fn found(shared: &Shared, name: &str) -> Result<Alert, Error> {
    Ok(shared
        .store
        .alert(name)
        .await?
        .ok_or_else(|| Error::not_found("alert_not_found", format!("no alert rule {name:?}")))?
        .view)
}

/// A rule's checks (`smtp`: the orchestrators have an SMTP server for email sinks); its
/// suppression window in milliseconds.
fn check(name: &str, req: &PutAlert, smtp: bool) -> Result<i64, Error> {
    let invalid = |field: &str, problem: String| {
        Error::bad_request("invalid_alert", format!("`{field}` {problem}"))
            .with_details(json!({ "field": field, "problem": problem }))
    };
    if let Some(problem) = identifier_problem(name) {
        return Err(invalid("name", problem.to_owned()));
    }
    crate::alerts::terms(&req.when)
        .map_err(|(field, problem)| invalid(&format!("when.{field}"), problem))?;
    for (field, filter) in [
        ("when.template", &req.when.template),
        ("when.schedule", &req.when.schedule),
    ] {
        if let Some(problem) = filter.as_deref().and_then(identifier_problem) {
            return Err(invalid(field, problem.to_owned()));
        }
    }
    check_sink(req, smtp).map_err(|(field, problem)| invalid(field, problem))?;
    let suppress = match &req.suppress {
        None => std::time::Duration::from_secs(900),
        Some(t) => {
            parse_duration("suppress", t).map_err(|e| invalid("suppress", e.problem.clone()))?
        }
    };
    if suppress > std::time::Duration::from_secs(86_400) {
        return Err(invalid("suppress", "must be 0s to 1 day".into()));
    }
    Ok(suppress.as_millis() as i64)
}

/// A rule's sink and secret: Err names the field and what is wrong with it.
fn check_sink(req: &PutAlert, smtp: bool) -> Result<(), (&'static str, String)> {
    match &req.sink {
        AlertSink::Webhook { url } | AlertSink::Slack { url } => {
            let parsed = reqwest::Url::parse(url).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https") && u.host().is_some() && url.len() <= 2048
            });
            if parsed.is_none() {
                return Err((
                    "sink.url",
                    format!(
                        "must be an http:// or https:// URL of at most 2048 characters (got {url:?})"
                    ),
                ));
            }
        }
        AlertSink::Email { to } => {
            if !smtp {
                return Err((
                    "sink.kind",
                    "`email` needs an SMTP server in the orchestrators' configuration \
                     (`[alerts] smtp_url`)"
                        .into(),
                ));
            }
            if to.is_empty() || to.len() > 20 {
                return Err(("sink.to", "must list 1 to 20 addresses".into()));
            }
            if let Some(bad) = to.iter().find(|a| a.parse::<lettre::Address>().is_err()) {
                return Err(("sink.to", format!("{bad:?} is not an email address")));
            }
        }
    }
    match (&req.secret, &req.sink) {
        (Some(_), AlertSink::Webhook { .. }) | (None, _) => {}
        (Some(_), _) => {
            return Err((
                "secret",
                "is for a webhook sink (a Slack sink's URL is its secret)".into(),
            ));
        }
    }
    match &req.secret {
        Some(s) if s.len() < 16 || s.len() > 256 || s.chars().any(char::is_control) => Err((
            "secret",
            "must be 16 to 256 characters, none of them control characters".into(),
        )),
        _ => Ok(()),
    }
}
