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

#[cfg(test)]
mod tests {
    use super::*;

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
