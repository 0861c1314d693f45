//! Dead letters through the API: list, show (body and headers), replay to the queue it came
//! from, discard. The keeper (`crate::dead_letters`) fills the table.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use tasker_shared::api::{DeadLetter as Shown, DeadLetterPage, ErrorBody, Replayed};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, check_limit};
use crate::dead_letters::replay::{SendBack, send_back};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::DeadLetter;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// 1 to 500, 50 by default.
    limit: Option<i64>,
    /// The previous page's `next_before`.
    #[param(value_type = Option<i64>)]
    before: Option<String>,
    /// Only those from this queue.
    queue: Option<String>,
    /// Only those whose reason starts with this.
    reason: Option<String>,
}

/// `GET /v1/dead-letters`: newest first, `?limit=` (1–500, default 50) `&before=ID`, `&queue=`,
/// `&reason=` (a prefix); a token
/// scoped to namespaces lists the dead letters that name a task of those namespaces.
#[utoipa::path(get, path = "/v1/dead-letters", operation_id = "list_dead_letters", tag = "dead-letters", params(ListQuery),
    responses(
        (status = 200, body = DeadLetterPage),
        (status = 400, description = "`invalid_limit`, `invalid_id`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<DeadLetterPage>, Error> {
    let limit = check_limit(q.limit)?;
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let dead_letters = shared
        .store
        .dead_letters(
            before,
            limit,
            caller.namespace_regex().as_deref(),
            (q.queue.as_deref(), q.reason.as_deref()),
        )
        .await?;
    let next_before = (dead_letters.len() as i64 == limit)
        .then(|| dead_letters.last().map(|l| l.id))
        .flatten();
    Ok(Json(DeadLetterPage {
        dead_letters,
        next_before,
    }))
}

/// `GET /v1/dead-letters/{id}`: with its headers and body (`body` when it is JSON, else
/// `body_text` when it is UTF-8, else `body_base64`).
#[utoipa::path(get, path = "/v1/dead-letters/{id}", operation_id = "get_dead_letter", tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id")),
    responses(
        (status = 200, body = Shown),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: it names a task of a namespace the token does not cover, or no task (for tokens of every namespace only)", body = ErrorBody),
        (status = 404, description = "`dead_letter_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Shown>, Error> {
    let id = parse_id(&id)?;
    check(&shared, &caller, id).await?;
    let letter = shared
        .store
        .dead_letter(id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json(render(letter)))
}

/// `POST /v1/dead-letters/{id}/replay`: published again, as it was, to the queue it came from;
/// removed once the broker confirms. A message that fails again comes back as a new dead letter.
#[utoipa::path(post, path = "/v1/dead-letters/{id}/replay", operation_id = "replay_dead_letter", tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id")),
    responses(
        (status = 200, body = Replayed),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 404, description = "`dead_letter_not_found`", body = ErrorBody),
        (status = 403, description = "`forbidden`: one of its entries names a task of a namespace the token does not cover, or none (for tokens of every namespace only)", body = ErrorBody),
        (status = 409, description = "`not_replayable`: it came from no results or steps queue of this cluster, a result named no sender, or a step message was not the orchestrators'", body = ErrorBody),
        (status = 503, description = "`broker_unavailable`: it is kept", body = ErrorBody),
    ))]
pub(super) async fn replay(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Replayed>, Error> {
    let id = parse_id(&id)?;
    check(&shared, &caller, id).await?;
    let sent = shared
        .store
        .replay_dead_letter(id, |letter| async {
            match send_back(&shared, &letter).await {
                Ok(_) => Ok(letter),
                Err(SendBack::Refused(why)) => {
                    Err(Error::new(StatusCode::CONFLICT, "not_replayable", why))
                }
                Err(SendBack::Broker(why)) => Err(Error::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "broker_unavailable",
                    why,
                )),
            }
        })
        .await?
        .ok_or_else(|| not_found(id))??;
    metrics::counter!(m::DEAD_LETTERS_REPLAYED.name).increment(1);
    tracing::info!(
        id,
        queue = sent.view.queue.as_deref(),
        "dead letter replayed"
    );
    Ok(Json(Replayed {
        replayed: id,
        queue: sent.view.queue,
    }))
}

/// `DELETE /v1/dead-letters/{id}`.
#[utoipa::path(delete, path = "/v1/dead-letters/{id}", operation_id = "discard_dead_letter", tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id")),
    responses(
        (status = 204, description = "Discarded"),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 403, description = "`forbidden`: it names a task of a namespace the token does not cover, or no task (for tokens of every namespace only)", body = ErrorBody),
        (status = 404, description = "`dead_letter_not_found`", body = ErrorBody),
    ))]
pub(super) async fn discard(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    let id = parse_id(&id)?;
    check(&shared, &caller, id).await?;
    if shared.store.discard_dead_letter(id).await? {
        tracing::info!(id, "dead letter discarded");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

/// Ok if the caller may touch dead letter `id`: one whose every entry names a task of its
/// namespaces, or any for a token of every namespace (only those see a dead letter that names
/// no task). 404 if there is none.
async fn check(shared: &Shared, caller: &Caller, id: i64) -> Result<(), Error> {
    if caller.namespace_regex().is_none() {
        return Ok(());
    }
    match shared.store.dead_letter_namespaces(id).await? {
        None => Err(not_found(id)),
        Some(Some(namespaces)) => namespaces.iter().try_for_each(|ns| caller.check(ns)),
        Some(None) => caller.require_unscoped(&format!(
            "dead letter {id}, which names no task (or one it cannot read),"
        )),
    }
}

fn render(letter: DeadLetter) -> Shown {
    let mut shown = Shown {
        info: letter.view,
        headers: letter.headers,
        body: None,
        body_text: None,
        body_base64: None,
    };
    if let Ok(body) = serde_json::from_slice::<Value>(&letter.body) {
        shown.body = Some(body);
    } else if let Ok(text) = std::str::from_utf8(&letter.body) {
        shown.body_text = Some(text.to_owned());
    } else {
        shown.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(&letter.body));
    }
    shown
}

fn parse_id(s: &str) -> Result<i64, Error> {
    s.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        Error::bad_request(
            "invalid_id",
            format!("{s:?} is not a dead letter id (a positive integer)"),
        )
    })
}

fn not_found(id: i64) -> Error {
    Error::not_found("dead_letter_not_found", format!("no dead letter {id}"))
}
