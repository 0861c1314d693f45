//! Step streams (docs/streams.md): the consumer of the streams queue, which keeps the chunks
//! workers publish (a batch per transaction, in the order they were published: the queue has a
//! single active consumer across the cluster) and hands them to this orchestrator's live
//! readers (`crate::stream_hub`) before they are committed.

use std::time::Duration;

use tasker_broker::{BasicAckOptions, Broker, DeadLetters, Delivery, topology};
use tasker_shared::message::decode_batch;
use tasker_shared::stream::Chunk;
use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{Kept, Offered};

/// Unacknowledged chunk messages the broker may push to the consumer.
const PREFETCH: u16 = 64;
/// Most messages kept in one transaction.
const BATCH_MAX: usize = 64;

/// Runs until cancelled (`Ok`) or the broker connection fails (`Err`). Only one orchestrator's
/// consumer is active at a time; the others wait here as the broker's standbys.
pub(crate) async fn run(
    shared: &Shared,
    broker: &Broker,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let queue = topology::streams_queue(&shared.config.queue_prefix);
    let tag = format!("orchestrator-{}-streams", std::process::id());
    let mut consumer = broker.consume(&queue, &tag, PREFETCH).await?;
    let dead = DeadLetters::new(broker.clone());
    loop {
        let batch = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            b = tasker_broker::next_batch(&mut consumer, BATCH_MAX) => b,
        };
        let deliveries = batch
            .ok_or(tasker_broker::Error::Closed)?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        keep(shared, &dead, deliveries, cancel).await?;
    }
}

/// Keeps the chunks of a batch of messages, then settles each message: acked, or (malformed,
/// or carrying a chunk refused) dead-lettered with the reason. The database unavailable, the
/// batch is tried again (after a pause growing to 5 s) while it stays unacknowledged.
async fn keep(
    shared: &Shared,
    dead: &DeadLetters,
    deliveries: Vec<Delivery>,
    cancel: &CancellationToken,
) -> Result<(), tasker_broker::Error> {
    let mut chunks: Vec<(usize, Chunk)> = Vec::new();
    let mut reasons: Vec<Option<String>> = vec![None; deliveries.len()];
    for (at, d) in deliveries.iter().enumerate() {
        match decode_batch::<Chunk>(&d.data) {
            Ok(read) if !read.is_empty() => chunks.extend(read.into_iter().map(|c| (at, c))),
            Ok(_) => reasons[at] = Some("malformed stream message: it carries no chunks".into()),
            Err(e) => reasons[at] = Some(format!("malformed stream message: {e}")),
        }
    }
    let mut senders = Vec::with_capacity(deliveries.len());
    for d in &deliveries {
        senders.push(loop {
            match shared.senders.judge(&shared.store, d).await {
                Ok(s) => break s,
                Err(e) => {
                    tracing::warn!(error = %e, "looking up the sender of stream chunks failed; retrying");
                    if !pause(cancel).await {
                        return Ok(());
                    }
                }
            }
        });
    }
    let offered: Vec<Offered> = chunks
        .iter()
        .map(|(at, c)| Offered {
            chunk: c,
            permit: senders[*at].permit.clone(),
        })
        .collect();
    let hub = &shared.streams;
    let kept: Kept = if offered.is_empty() {
        Kept::default()
    } else {
        loop {
            match shared.store.keep_chunks(&offered, |c| hub.offer(c)).await {
                Ok(kept) => break kept,
                Err(e) => {
                    tracing::warn!(error = %e, "keeping stream chunks failed; retrying");
                    if !pause(cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    };
    count(&kept);
    for (task, next) in &kept.heads {
        hub.kept(*task, *next);
    }
    for (i, reason) in kept.refused {
        let at = chunks[i].0;
        let sender = senders[at].name.as_deref().unwrap_or("(no user_id)");
        let reason = format!("{reason} (sent by broker user {sender})");
        reasons[at] = Some(match reasons[at].take() {
            Some(earlier) if earlier.len() < 2_000 => format!("{earlier}; {reason}"),
            Some(earlier) => earlier,
            None => reason,
        });
    }
    for (at, d) in deliveries.iter().enumerate() {
        let settled = match &reasons[at] {
            Some(reason) => {
                tracing::warn!(%reason, "a stream message was refused; dead-lettering it");
                dead.bury_from(d, reason, senders[at].name.as_deref()).await
            }
            None => d
                .ack(BasicAckOptions::default())
                .await
                .map(drop)
                .map_err(Into::into),
        };
        if let Err(e) = settled {
            tracing::debug!(error = %e, "settling a stream message failed; it will be redelivered");
        }
    }
    Ok(())
}

/// Counts what a batch came to: each chunk once (copies in ancestors' streams not again).
fn count(kept: &Kept) {
    let now = chrono::Utc::now();
    let own = || kept.chunks.iter().filter(|k| k.namespace.is_none());
    metrics::counter!(m::STREAM_CHUNKS.name).increment(own().count() as u64);
    let mut bytes = 0;
    for c in own().map(|k| &k.chunk) {
        bytes += c.text.as_ref().map_or(0, String::len)
            + c.data.as_ref().map_or(0, |d| d.to_string().len());
        let lag = (now - c.at).to_std().unwrap_or_default();
        metrics::histogram!(m::STREAM_LAG.name).record(lag.as_secs_f64());
    }
    metrics::counter!(m::STREAM_BYTES.name).increment(bytes as u64);
    for (reason, n) in [
        ("refused", kept.refused.len()),
        ("copy", kept.copies),
        ("after_end", kept.after_end),
        ("too_large", kept.too_large),
        ("superseded", kept.superseded),
    ] {
        if n > 0 {
            metrics::counter!(m::STREAM_CHUNKS_LEFT_OUT.name, "reason" => reason)
                .increment(n as u64);
        }
    }
}

/// Waits before trying again; `false` if the orchestrator stops first.
async fn pause(cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(Duration::from_millis(500)) => true,
    }
}

/// Tells the hub what the notification listener relays (other orchestrators' chunks kept,
/// tasks that ended, a reconnect) until cancelled.
pub(crate) async fn follow(shared: Shared, cancel: CancellationToken) {
    let mut events = shared.events.subscribe();
    let hub = shared.streams.clone();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return,
            e = events.recv() => e,
        };
        match event {
            Ok(Event::StreamKept { heads }) => {
                for (task, next) in heads {
                    hub.kept(task, next);
                }
            }
            Ok(Event::TaskFinished { task_id, .. }) => hub.finished(task_id),
            Ok(Event::ListenerConnected)
            | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                hub.resync_all();
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
