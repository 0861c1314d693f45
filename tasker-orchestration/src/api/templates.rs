//! Template routes: register a version (workers do it when they start), list versions, show one.
//!
//! A registration is validated exactly as an orchestrator validates its `--templates` files at
//! start-up ([`TaskTemplate::load`]): the same limits and the same `file:line: problem`
//! messages, pointing into the submitted text. Nothing is stored unless it is valid.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use tasker_shared::TaskTemplate;
use tasker_shared::template::is_identifier;

use super::extract::{Path, Query};
use super::{Error, check_filter, request_body};
use crate::shared::Shared;
use crate::store::{Registration, TemplateFilter, TemplateView};

/// Longest `registered_by` and `source` label.
const MAX_LABEL_CHARS: usize = 256;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RegisterQuery {
    /// Who registers it: a worker (`worker:python:host-123`), a user, a deploy job.
    registered_by: Option<String>,
    /// The file name the text came from, used in error messages (`<request>` if absent).
    source: Option<String>,
}

/// `POST /v1/templates`: the body is one template, YAML or JSON (JSON is YAML).
/// 201 a new version; 200 the same definition was already registered under that version;
/// 409 `template_version_conflict` if the version is registered with another definition;
/// 422 `invalid_template` with the file, line and problem.
pub(super) async fn register(
    State(shared): State<Shared>,
    Query(q): Query<RegisterQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body = request_body(&shared, body)?;
    let registered_by = label("registered_by", q.registered_by, "api")?;
    let source = label("source", q.source, "<request>")?;
    let text = std::str::from_utf8(&body).map_err(|e| {
        invalid_template(
            format!("{source}: the template is not UTF-8 text: {e}"),
            None,
        )
    })?;
    let loaded = TaskTemplate::load(text, &source).map_err(|e| {
        let details = json!({ "file": e.file, "line": e.line, "problem": e.kind.to_string() });
        invalid_template(e.to_string(), Some(details))
    })?;
    let key = loaded.template.key();
    match shared.catalog.register(loaded, &registered_by).await? {
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

/// A short free-text label from the query string: bounded, no control characters.
fn label(field: &str, value: Option<String>, default: &str) -> Result<String, Error> {
    let Some(value) = value else {
        return Ok(default.to_owned());
    };
    if value.is_empty()
        || value.chars().count() > MAX_LABEL_CHARS
        || value.chars().any(char::is_control)
    {
        return Err(Error::bad_request(
            "invalid_query",
            format!(
                "`{field}` must be 1 to {MAX_LABEL_CHARS} characters, none of them control \
                 characters"
            ),
        ));
    }
    Ok(value)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    namespace: Option<String>,
    name: Option<String>,
}

/// `GET /v1/templates`: every registered version, by namespace and name, oldest first, with
/// when and by whom it was registered.
pub(super) async fn list(
    State(shared): State<Shared>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, Error> {
    check_filter("namespace", q.namespace.as_deref())?;
    check_filter("name", q.name.as_deref())?;
    let templates = shared
        .store
        .template_views(&TemplateFilter {
            namespace: q.namespace,
            name: q.name,
        })
        .await?;
    Ok(Json(json!({ "templates": templates })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ShowQuery {
    version: Option<String>,
}

/// `GET /v1/templates/{namespace}/{name}?version=`: one version, the newest if none is named.
pub(super) async fn show(
    State(shared): State<Shared>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<ShowQuery>,
) -> Result<Json<TemplateView>, Error> {
    let not_found = || super::unknown_template(&namespace, &name, q.version.as_deref());
    let identifiers = [
        Some(namespace.as_str()),
        Some(name.as_str()),
        q.version.as_deref(),
    ];
    if !identifiers.into_iter().flatten().all(is_identifier) {
        return Err(not_found());
    }
    shared
        .store
        .template(&namespace, &name, q.version.as_deref())
        .await?
        .map(Json)
        .ok_or_else(not_found)
}
