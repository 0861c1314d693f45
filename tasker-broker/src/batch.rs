//! Batches formed by load: wait for the first item, then take whatever else has already arrived,
//! up to a limit, never waiting to fill the batch. One helper for every hop that batches — the
//! result consumer, the worker's step consumer and its result publisher.

use futures_util::{FutureExt, Stream, StreamExt};

/// Waits for the next item of `stream`, then takes the items that are ready at once, up to
/// `max` in all. `None` when the stream has ended.
pub async fn next_batch<S>(stream: &mut S, max: usize) -> Option<Vec<S::Item>>
where
    S: Stream + Unpin,
{
    let first = stream.next().await?;
    let mut batch = vec![first];
    while batch.len() < max {
        match stream.next().now_or_never() {
            Some(Some(item)) => batch.push(item),
            Some(None) | None => break,
        }
    }
    Some(batch)
}

/// Several streams as one that ends as soon as any one of them ends. A worker consumes one
/// queue per namespace and priority lane: when the broker ends one of those consumers (it
/// cancels it when a quorum queue's leader is lost or the queue is deleted, or its channel is
/// closed) the session must end and start again, all of them subscribed anew, instead of going
/// on with the others while that queue has no consumer (a step there would wait forever).
pub fn until_any_ends<S>(streams: Vec<S>) -> impl Stream<Item = S::Item> + Unpin
where
    S: Stream + Unpin + Send + 'static,
    S::Item: Send + 'static,
{
    use futures_util::future;
    let ending = streams.into_iter().map(|s| {
        s.map(Some)
            .chain(futures_util::stream::once(future::ready(None)))
            .boxed()
    });
    futures_util::stream::select_all(ending)
        .take_while(|item| future::ready(item.is_some()))
        .filter_map(future::ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_merged_stream_ends_when_any_of_its_streams_ends() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let mut rx = rx;
        let open = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed();
        let short = futures_util::stream::iter(vec![7u32]).boxed();
        tx.send(1).unwrap();
        let mut merged = until_any_ends(vec![open, short]);
        let mut seen = Vec::new();
        while let Some(item) = merged.next().await {
            seen.push(item);
        }
        // It ended although `tx` is open: the short stream ended.
        seen.sort();
        assert!(seen.contains(&7), "{seen:?}");
        drop(tx);
    }

    #[tokio::test]
    async fn takes_what_has_arrived_up_to_the_limit_without_waiting() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        let mut stream = futures_util::stream::poll_fn(|cx| rx.poll_recv(cx));
        assert_eq!(next_batch(&mut stream, 3).await, Some(vec![0, 1, 2]));
        // Two left: the batch closes at what is there instead of waiting for a third.
        assert_eq!(next_batch(&mut stream, 3).await, Some(vec![3, 4]));
        drop(tx);
        assert_eq!(next_batch(&mut stream, 3).await, None);
    }
}
