//! Sending a dead letter back where it came from (`POST /v1/dead-letters/{id}/replay`, and the
//! operations that replay by filter): only back to the queue it really came from, as the
//! orchestrator recorded it (never as a header said) — the results queue, as the sender it came
//! from, or a namespace's steps queue, for a step message the orchestrators' own broker user sent.

use tasker_broker::{AMQPValue, FieldTable, Outgoing, dead, topology};

use crate::shared::Shared;
use crate::store::DeadLetter;

/// Why a dead letter was not sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SendBack {
    /// It may never be: only discarding it is possible (the reason).
    Refused(String),
    /// The broker did not take it: it is kept, to try again.
    Broker(String),
}

/// Where dead letter `letter` may be replayed to, and as whom.
pub(crate) fn destination(
    shared: &Shared,
    letter: &DeadLetter,
) -> Result<(String, String), String> {
    let prefix = &shared.config.queue_prefix;
    let own = tasker_broker::user_of(&shared.config.amqp_url);
    let sender = letter.view.sender.as_deref();
    match letter.view.queue.as_deref() {
        Some(q) if q == topology::results_queue(prefix) => match sender {
            Some(s) => Ok((q.to_owned(), s.to_owned())),
            None => Err(
                "is a result message that named no sender: replayed, it could move nothing".into(),
            ),
        },
        Some(q) if q.starts_with(&format!("{prefix}.steps.")) => match sender {
            Some(s) if s == own => Ok((q.to_owned(), s.to_owned())),
            other => Err(format!(
                "was sent to {q:?} by {}, not by the orchestrators' broker user: a step message \
                 is only ever the orchestrators'",
                other.map_or("no one named".to_owned(), |s| format!("{s:?}"))
            )),
        },
        other => Err(format!(
            "came from {}, not from one of this cluster's results or steps queues",
            other.map_or("an unknown queue".into(), |q| format!("{q:?}"))
        )),
    }
}

/// Publishes `letter` again, as it was, to the queue it came from, with the sender the
/// orchestrator recorded (a result replayed may move only the steps its first sender may
/// serve); returns that queue once the broker confirmed.
pub(crate) async fn send_back(shared: &Shared, letter: &DeadLetter) -> Result<String, SendBack> {
    let (queue, sender) = destination(shared, letter).map_err(|why| {
        SendBack::Refused(format!(
            "dead letter {} {why}; only discarding it is possible",
            letter.view.id
        ))
    })?;
    let mut headers = FieldTable::default();
    headers.insert(
        dead::SENDER_HEADER.into(),
        AMQPValue::LongString(sender.as_str().into()),
    );
    shared
        .dispatcher
        .send_now(
            Outgoing {
                queue: queue.clone(),
                payload: letter.body.clone(),
            },
            headers,
        )
        .await
        .map_err(|e| SendBack::Broker(format!("could not publish to {queue}: {e}; try again")))?;
    Ok(queue)
}
