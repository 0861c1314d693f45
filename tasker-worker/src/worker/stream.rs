//! Stream chunks on their way out: published to the streams queue in batches (one confirm
//! round each, packed into as few messages as fit, rounds pipelined like results'). An
//! attempt's end goes with them, and its result is handed to the result publisher only once
//! the round carrying the end is confirmed: every chunk of the attempt is then in the queue
//! ahead of anything its result causes.

use tokio::sync::mpsc;

use tasker_broker::Publisher;

use super::publish::pipelined;
use crate::metrics as m;
use crate::stream::Emitted;

/// Publishes chunks until every sender is gone (the session's and the emitters', which hold
/// weak ones), then confirms what is in flight.
pub(super) async fn publish_chunks(
    publisher: Publisher,
    queue: String,
    rx: mpsc::UnboundedReceiver<Emitted>,
) -> Result<(), tasker_broker::Error> {
    pipelined(
        publisher,
        queue,
        rx,
        m::STREAM_MESSAGE_BATCH_SIZE.name,
        |batch| {
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
            (encoded, async move {
                for publish in then {
                    publish();
                }
                Ok(())
            })
        },
    )
    .await
}
