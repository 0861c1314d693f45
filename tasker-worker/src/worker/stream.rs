//! Stream chunks on their way out: published to the streams queue in batches (one confirm
//! round each, packed into as few messages as fit, rounds pipelined like results'). An
//! attempt's end goes with them, and its result is handed to the result publisher only once
//! the round carrying the end is confirmed: every chunk of the attempt is then in the queue
//! ahead of anything its result causes.

use futures_util::StreamExt;
use tokio::sync::mpsc;

use tasker_broker::{Outgoing, Publisher, next_batch};

use super::publish::pack;
use super::{BATCH_MAX, ROUNDS_IN_FLIGHT};
use crate::metrics as m;
use crate::stream::Emitted;

/// Publishes chunks until every sender is gone (the session's and the emitters', which hold
/// weak ones), then confirms what is in flight.
pub(super) async fn publish_chunks(
    publisher: Publisher,
    queue: String,
    mut rx: mpsc::UnboundedReceiver<Emitted>,
) -> Result<(), tasker_broker::Error> {
    let mut arrivals = futures_util::stream::poll_fn(|cx| rx.poll_recv(cx));
    let mut rounds = futures_util::stream::FuturesOrdered::new();
    let mut open = true;
    while open || !rounds.is_empty() {
        tokio::select! {
            batch = next_batch(&mut arrivals, BATCH_MAX), if open && rounds.len() < ROUNDS_IN_FLIGHT => {
                let Some(batch) = batch else {
                    open = false;
                    continue;
                };
                let mut encoded = Vec::with_capacity(batch.len());
                let mut then = Vec::new();
                for emitted in batch {
                    let chunk = match emitted {
                        Emitted::Chunk(c) => c,
                        Emitted::End(c, publish) => {
                            then.push(publish);
                            c
                        }
                    };
                    encoded.push(serde_json::to_vec(&chunk).expect("a chunk always serializes"));
                }
                let out: Vec<Outgoing> = pack(encoded, m::STREAM_MESSAGE_BATCH_SIZE.name)
                    .into_iter()
                    .map(|payload| Outgoing {
                        queue: queue.clone(),
                        payload,
                    })
                    .collect();
                let round = publisher.send_all(&out).await?;
                rounds.push_back(async move {
                    round.confirmed().await?;
                    Ok::<_, tasker_broker::Error>(then)
                });
            }
            Some(confirmed) = rounds.next() => {
                for publish in confirmed? {
                    publish();
                }
            }
        }
    }
    Ok(())
}
