//! Template routes: register a version (workers do it when they start), list versions, show one.
//!
//! A registration is validated exactly as an orchestrator validates its `--templates` files at
//! start-up ([`tasker_shared::TaskTemplate::load`]): the same limits and the same `file:line: problem`
//! messages, pointing into the submitted text. Nothing is stored unless it is valid.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use std::time::Duration;

use tasker_shared::api::{ErrorBody, RegisteredTemplate, TemplateList};
use tasker_shared::template::{ErrorKind, child};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, check_filter, request_body};
use crate::shared::Shared;
use crate::store::{Registration, TemplateFilter, TemplateView};

/// Longest `registered_by` and `source` label, in characters.
const MAX_LABEL_CHARS: usize = 256;

/// How much longer than its budget a parse in this process (no child to kill) is waited for.
const PARSE_GRACE: Duration = Duration::from_millis(250);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct RegisterQuery {
    /// Who registers it: a worker (`worker:python:host-123`), a user, a deploy job. With
    /// tokens required the token's name is recorded as who registered it, and this is kept
    /// beside it as what the caller says it is (`token:ci (as worker:python:host-123)`).
    registered_by: Option<String>,
    /// The file name the text came from, used in error messages (`<request>` if absent).
    source: Option<String>,
}

/// `POST /v1/templates`: the body is one template, YAML or JSON (JSON is YAML).
/// 201 a new version; 200 the same definition was already registered under that version;
/// 409 `template_version_conflict` if the version is registered with another definition;
/// 422 `invalid_template` with the file, line and problem.
#[utoipa::path(post, path = "/v1/templates", operation_id = "register_template", tag = "templates", params(RegisterQuery),
    request_body(content = String, content_type = "application/yaml",
                 description = "One template, YAML or JSON"),
    responses(
        (status = 201, description = "A new version", body = RegisteredTemplate),
        (status = 200, description = "Already registered with the same definition", body = RegisteredTemplate),
        (status = 403, description = "`forbidden`: the token does not cover the template's namespace, or one its tasks reach (a step's `namespace:`, a child step's template and what it reaches)", body = ErrorBody),
        (status = 409, description = "`template_version_conflict`", body = ErrorBody),
        (status = 422, description = "`invalid_template` (details: file, line, problem)", body = ErrorBody),
    ))]
pub(super) async fn register(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<RegisterQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let registered_by = registered_by(q.registered_by, &caller)?;
    let source = source_label(q.source);
    let text = String::from_utf8(body.to_vec()).map_err(|e| {
        invalid_template(
            format!("{source}: the template is not UTF-8 text: {e}"),
            None,
        )
    })?;
    // Parsed off the server's async threads, in a child process killed when its budget ends
    // (tasker_shared::template::child): the text was bounded before any parser sees it
    // (tasker_shared::template::bounds), so this is a second guard. An orchestrator embedded
    // in another program parses in its own process; a timeout answers then, and the parse
    // goes on in the background.
    let budget = Duration::from_millis(shared.config.orchestrator.template_parse_budget_ms);
    let label = source.clone();
    let parsing = tokio::task::spawn_blocking(move || child::load_template(&text, &label, budget));
    // In a child, the parse is over (answered or killed) when the call returns: wait for it,
    // so that no answer comes before the kill.
    let parsed = if child::isolated() {
        Ok(parsing.await)
    } else {
        tokio::time::timeout(budget + PARSE_GRACE, parsing).await
    };
    let loaded = match parsed {
        Ok(Ok(loaded)) => loaded.map_err(refused)?,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "parsing a template failed");
            return Err(Error::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; the server log has the details",
            ));
        }
        Err(_) => {
            return Err(refused(tasker_shared::template::Error::of_file(
                &source,
                ErrorKind::TooSlow(budget.as_millis() as u64),
            )));
        }
    };
    caller.audit().target("template", loaded.template.key());
    // Every namespace its tasks can put work into — its own, each step's, each child's and
    // what the child templates reach — needs the caller's token.
    caller.check(&loaded.template.namespace)?;
    caller.check_template(&shared, &loaded).await?;
    let key = loaded.template.key();
    let namespace = loaded.template.namespace.clone();
    let registered = shared.catalog.register(loaded, &registered_by).await?;
    if !matches!(registered, Registration::Conflict(_)) {
        // The namespace's steps queue exists before its workers consume it: a worker's own
        // broker user may not declare queues, only check that they are there.
        shared.dispatcher.declare(&namespace).await;
    }
    match registered {
        Registration::Created(v) => {
            tracing::info!(template = %key, %registered_by, "template registered");
            Ok((StatusCode::CREATED, Json(v)).into_response())
        }
        Registration::Unchanged(v) => Ok((StatusCode::OK, Json(v)).into_response()),
        Registration::Conflict(v) => Err(Error::new(
            StatusCode::CONFLICT,
            "template_version_conflict",
            format!(
                "{key} is already registered with a different definition (at {} by {}); a \
                 version is immutable: register the change under a new version",
                v.registered_at,
                v.registered_by.as_deref().unwrap_or("unknown")
            ),
        )
        .with_details(json!({
            "id": v.id,
            "registered_at": v.registered_at,
            "registered_by": v.registered_by,
        }))),
    }
}

/// A template the parser refused, with where and why; one that took too long names the bound.
fn refused(e: tasker_shared::template::Error) -> Error {
    let mut details = json!({ "file": e.file, "line": e.line, "column": e.column, "problem": e.kind.to_string() });
    if let ErrorKind::TooSlow(_) = e.kind {
        details["problem"] = json!("too_slow_to_parse");
        details["bound"] = json!("orchestrator.template_parse_budget_ms");
    }
    invalid_template(e.to_string(), Some(details))
}

fn invalid_template(message: String, details: Option<Value>) -> Error {
    let e = Error::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_template",
        message,
    );
    match details {
        Some(d) => e.with_details(d),
        None => e,
    }
}

/// Who registers: with a token, the token (`token:ci`), followed by what the request says
/// (`token:ci (as worker:rust:host-1)`), which can never stand in for it; without tokens, what
/// the request says (`api` if nothing). No control characters (400); cut to 256 characters.
fn registered_by(value: Option<String>, caller: &Caller) -> Result<String, Error> {
    if let Some(v) = &value
        && (v.is_empty() || v.chars().any(char::is_control))
    {
        return Err(Error::bad_request(
            "invalid_query",
            "`registered_by` must be non-empty and free of control characters",
        ));
    }
    let label = match (caller.principal(), value) {
        (Some(p), Some(says)) => format!("token:{} (as {says})", p.name),
        (Some(p), None) => format!("token:{}", p.name),
        (None, Some(says)) => says,
        (None, None) => "api".to_owned(),
    };
    Ok(label.chars().take(MAX_LABEL_CHARS).collect())
}

/// The `source` label, only ever shown in messages: control characters become `?` and a long
/// path keeps its last 256 characters (the file name), so that a valid template is never
/// refused for where it was read from.
fn source_label(value: Option<String>) -> String {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return "<request>".to_owned();
    };
    let chars: Vec<char> = value
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    match chars.len().checked_sub(MAX_LABEL_CHARS) {
        Some(cut) if cut > 0 => format!("…{}", chars[cut + 1..].iter().collect::<String>()),
        _ => chars.into_iter().collect(),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    namespace: Option<String>,
    name: Option<String>,
}

/// `GET /v1/templates`: every registered version, by namespace and name, oldest first, with
/// when and by whom it was registered (a token scoped to namespaces lists those namespaces').
#[utoipa::path(get, path = "/v1/templates", operation_id = "list_templates", tag = "templates", params(ListQuery),
    responses(
        (status = 200, body = TemplateList),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `namespace` is one the token does not cover", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<TemplateList>, Error> {
    check_filter("namespace", q.namespace.as_deref())?;
    check_filter("name", q.name.as_deref())?;
    if let Some(ns) = &q.namespace {
        caller.check(ns)?;
    }
    let templates = shared
        .store
        .template_views(&TemplateFilter {
            namespace: q.namespace,
            namespaces: caller.namespace_regex(),
            name: q.name,
        })
        .await?;
    Ok(Json(TemplateList { templates }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ShowQuery {
    /// The newest registered version if none is named.
    version: Option<String>,
}

/// `GET /v1/templates/{namespace}/{name}?version=`: one version, the newest if none is named.
#[utoipa::path(get, path = "/v1/templates/{namespace}/{name}", operation_id = "get_template", tag = "templates",
    params(("namespace" = String, Path), ("name" = String, Path), ShowQuery),
    responses(
        (status = 200, body = RegisteredTemplate),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<ShowQuery>,
) -> Result<Json<TemplateView>, Error> {
    caller.check(&namespace)?;
    let mut view = shared
        .store
        .template(&namespace, &name, q.version.as_deref())
        .await?
        .ok_or_else(|| super::unknown_template(&namespace, &name, q.version.as_deref()))?;
    if let Ok(template) = view.template() {
        let served = crate::store::Served::new(&shared.store.workers(false).await?);
        view.unserved_steps = Some(served.unserved_steps(&template));
    }
    Ok(Json(view))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_source_keeps_its_file_name_and_loses_control_characters() {
        let long = format!("/{}/greet\n.yaml", "d".repeat(1000));
        let label = source_label(Some(long));
        assert_eq!(label.chars().count(), MAX_LABEL_CHARS);
        assert!(
            label.starts_with('…') && label.ends_with("/greet?.yaml"),
            "{label}"
        );
        assert_eq!(source_label(Some("a.yaml".into())), "a.yaml");
        assert_eq!(source_label(None), "<request>");
    }

    #[test]
    fn registered_by_is_cut_not_refused_but_control_characters_are_refused() {
        let anonymous = Caller::from(None);
        let long = registered_by(Some("u".repeat(300)), &anonymous)
            .ok()
            .unwrap_or_default();
        assert_eq!(long.chars().count(), MAX_LABEL_CHARS);
        assert!(registered_by(Some("a\u{0}".into()), &anonymous).is_err());
        assert_eq!(registered_by(None, &anonymous).ok().as_deref(), Some("api"));
    }

    #[test]
    fn with_a_token_the_token_says_who_registered() {
        let ci = Caller::from(Some(crate::store::Principal {
            id: 1,
            name: "ci".into(),
            scope: crate::store::Scope::Write,
            namespaces: None,
            expires_at: None,
        }));
        assert_eq!(registered_by(None, &ci).ok().as_deref(), Some("token:ci"));
        assert_eq!(
            registered_by(Some("someone-else".into()), &ci)
                .ok()
                .as_deref(),
            Some("token:ci (as someone-else)")
        );
    }
}
