//! Dead letters through the API: list, show (body and headers), replay to the queue it came
//! from, discard. The keeper (`crate::dead_letters`) fills the table.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use tasker_broker::{Outgoing, topology};

use super::extract::{Path, Query};
use super::{Error, check_limit};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::DeadLetter;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    limit: Option<i64>,
    before: Option<String>,
}

/// `GET /v1/dead-letters`: newest first, `?limit=` (1–500, default 50) `&before=ID`.
pub(super) async fn list(
    State(shared): State<Shared>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, Error> {
    let limit = check_limit(q.limit)?;
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let letters = shared.store.dead_letters(before, limit).await?;
    let next = (letters.len() as i64 == limit)
        .then(|| letters.last().map(|l| l.id))
        .flatten();
    Ok(Json(
        json!({ "dead_letters": letters, "next_before": next }),
    ))
}

/// `GET /v1/dead-letters/{id}`: with its headers and body (`body` when it is JSON, else
/// `body_text` when it is UTF-8, else `body_base64`).
pub(super) async fn show(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, Error> {
    let id = parse_id(&id)?;
    let letter = shared
        .store
        .dead_letter(id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json(render(letter)))
}

/// `POST /v1/dead-letters/{id}/replay`: published again, as it was, to the queue it came from;
/// removed once the broker confirms. A message that fails again comes back as a new dead letter.
pub(super) async fn replay(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, Error> {
    let id = parse_id(&id)?;
    let prefix = &shared.config.queue_prefix;
    let dead_queue = topology::dead_letter_queue(prefix);
    let sent = shared
        .store
        .replay_dead_letter(id, |letter| async {
            let queue = match letter.view.queue.as_deref() {
                Some(q) if q.starts_with(&format!("{prefix}.")) && q != dead_queue => q.to_owned(),
                other => {
                    return Err(Error::new(
                        StatusCode::CONFLICT,
                        "not_replayable",
                        format!(
                            "dead letter {id} came from {}, not from one of this cluster's queues; \
                             only discarding it is possible",
                            other.map_or("an unknown queue".into(), |q| format!("{q:?}"))
                        ),
                    ));
                }
            };
            shared
                .dispatcher
                .send_now(Outgoing {
                    queue: queue.clone(),
                    payload: letter.body.clone(),
                })
                .await
                .map_err(|e| {
                    Error::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "broker_unavailable",
                        format!("could not publish to {queue}: {e}; try again"),
                    )
                })?;
            Ok(letter)
        })
        .await?
        .ok_or_else(|| not_found(id))??;
    metrics::counter!(m::DEAD_LETTERS_REPLAYED.name).increment(1);
    tracing::info!(id, queue = ?sent.view.queue, "dead letter replayed");
    Ok(Json(json!({ "replayed": id, "queue": sent.view.queue })))
}

/// `DELETE /v1/dead-letters/{id}`.
pub(super) async fn discard(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    let id = parse_id(&id)?;
    if shared.store.discard_dead_letter(id).await? {
        tracing::info!(id, "dead letter discarded");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

fn render(letter: DeadLetter) -> Value {
    let mut v = json!(letter.view);
    v["headers"] = letter.headers;
    if let Ok(body) = serde_json::from_slice::<Value>(&letter.body) {
        v["body"] = body;
    } else if let Ok(text) = std::str::from_utf8(&letter.body) {
        v["body_text"] = json!(text);
    } else {
        v["body_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(&letter.body));
    }
    v
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
