//! Results on their way out: published in batches (one confirm round each, packed into as few
//! messages as fit), and the step messages that carried their steps acknowledged once every
//! result they owe is confirmed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use tokio::sync::mpsc;

use tasker_broker::{BasicAckOptions, Delivery, Outgoing, Publisher, next_batch};
use tasker_shared::StepResult;
use tasker_shared::message::pack_batches;
use tasker_telemetry::Span;

use super::{BATCH_MAX, RESULT_MESSAGE_BYTES, ROUNDS_IN_FLIGHT};
use crate::metrics as m;

/// A result to publish: the step message that carried its step, and the result's span.
pub(super) type Publish = (Arc<Carrier>, StepResult, Option<Span>);

/// A step message and how many of the steps it carried still await a confirmed result.
pub(super) struct Carrier {
    pub(super) delivery: Delivery,
    pub(super) open: AtomicUsize,
}

impl Carrier {
    /// Records one confirmed result (or one step it carried that needs none); acks the message
    /// when it was the last.
    pub(super) async fn settle(&self) -> Result<(), tasker_broker::Error> {
        if self.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.delivery.ack(BasicAckOptions::default()).await?;
        }
        Ok(())
    }
}

/// Publishes results in batches (one confirm round each, as few messages as fit), then settles
/// the step messages that carried them once their round is confirmed.
pub(super) async fn publish_results(
    publisher: Publisher,
    queue: String,
    rx: mpsc::UnboundedReceiver<Publish>,
) -> Result<(), tasker_broker::Error> {
    pipelined(
        publisher,
        queue,
        rx,
        m::RESULT_MESSAGE_BATCH_SIZE.name,
        |batch| {
            ::metrics::histogram!(m::RESULT_BATCH_SIZE.name).record(batch.len() as f64);
            let encoded = batch
                .iter()
                .map(|(_, r, _)| serde_json::to_vec(r).expect("a StepResult always serializes"))
                .collect();
            (encoded, async move {
                // The result spans end here, confirmed.
                for (carrier, _, _span) in batch {
                    carrier.settle().await?;
                }
                Ok(())
            })
        },
    )
    .await
}

/// Publishes what arrives on `rx` to `queue` in batches: `prepare` turns a batch into its
/// encoded items (packed into as few messages as fit; `histogram` records the items of each)
/// and what to do once their round is confirmed. Rounds are pipelined: a batch goes out while
/// earlier rounds still wait for their confirms (a disk sync on the broker each), up to
/// [`ROUNDS_IN_FLIGHT`], and their confirmations are handled in order. Ends once every sender
/// is gone and what is in flight is confirmed.
pub(super) async fn pipelined<T, Done>(
    publisher: Publisher,
    queue: String,
    mut rx: mpsc::UnboundedReceiver<T>,
    histogram: &'static str,
    mut prepare: impl FnMut(Vec<T>) -> (Vec<Vec<u8>>, Done),
) -> Result<(), tasker_broker::Error>
where
    Done: std::future::Future<Output = Result<(), tasker_broker::Error>>,
{
    let mut arrivals = futures_util::stream::poll_fn(|cx| rx.poll_recv(cx));
    let mut rounds = futures_util::stream::FuturesOrdered::new();
    let mut open = true;
    while open || !rounds.is_empty() {
        tokio::select! {
            batch = next_batch(&mut arrivals, BATCH_MAX), if open && rounds.len() < ROUNDS_IN_FLIGHT => {
                let Some(batch) = batch else {
                    // Every sender is gone (stopping): confirm what is in flight, then end.
                    open = false;
                    continue;
                };
                let (encoded, done) = prepare(batch);
                let out: Vec<Outgoing> = pack(encoded, histogram)
                    .into_iter()
                    .map(|payload| Outgoing {
                        queue: queue.clone(),
                        payload,
                    })
                    .collect();
                let round = publisher.send_all(&out).await?;
                rounds.push_back(async move {
                    round.confirmed().await?;
                    done.await
                });
            }
            Some(confirmed) = rounds.next() => confirmed?,
        }
    }
    Ok(())
}

/// Messages for encoded results (or stream chunks): JSON arrays of up to
/// [`RESULT_MESSAGE_BYTES`]; one larger than that travels alone. `histogram` records the
/// number of items of each message.
fn pack(encoded: Vec<Vec<u8>>, histogram: &'static str) -> Vec<Vec<u8>> {
    let packed = pack_batches(encoded, BATCH_MAX, RESULT_MESSAGE_BYTES);
    let mut out = Vec::with_capacity(packed.len());
    for p in packed {
        match p {
            Ok(batch) => {
                ::metrics::histogram!(histogram).record(batch.items.len() as f64);
                out.push(batch.body);
            }
            Err((_, item)) => {
                let mut body = Vec::with_capacity(item.len() + 2);
                body.push(b'[');
                body.extend_from_slice(&item);
                body.push(b']');
                out.push(body);
            }
        }
    }
    out
}
