//! The batches of an operation over dead letters: a discard removes a batch in one transaction;
//! a replay sends each one back where it came from (`crate::dead_letters::replay`) and removes
//! it in the transaction that records its outcome, once the broker took it. A broker that does
//! not take one ends the batch; the operation goes on from there at its next turn.

use uuid::Uuid;

use crate::dead_letters::replay::{SendBack, send_back};
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{self, Batch, Replay};

/// Acts on the next `n` dead letters of operation `id` (`replay` or `discard`) within `covers`.
pub(super) async fn batch(
    shared: &Shared,
    id: Uuid,
    action: &str,
    n: usize,
    covers: Option<&str>,
) -> Result<Batch, store::Error> {
    let mut batch = if action == "discard" {
        shared.store.discard_batch(id, n, covers).await?
    } else {
        replay(shared, id, n, covers).await?
    };
    batch.state = shared.store.hold_operation(id, super::LEASE).await?;
    Ok(batch)
}

/// Replays the next `n` dead letters of operation `id`, one transaction each.
async fn replay(
    shared: &Shared,
    id: Uuid,
    n: usize,
    covers: Option<&str>,
) -> Result<Batch, store::Error> {
    let mut batch = Batch::default();
    for letter in shared.store.dead_letters_left(id, n).await? {
        let done = shared
            .store
            .replay_in_operation(id, letter, covers, |l| async move {
                match send_back(shared, &l).await {
                    Ok(_) => Ok(()),
                    Err(SendBack::Refused(why)) => Err(Some(why)),
                    Err(SendBack::Broker(why)) => {
                        tracing::warn!(operation = %id, letter, "{why}");
                        Err(None)
                    }
                }
            })
            .await?;
        match done {
            Ok(Replay::Replayed) => {
                ::metrics::counter!(m::DEAD_LETTERS_REPLAYED.name).increment(1);
                batch.acted += 1;
            }
            Ok(Replay::Left(_)) => batch.skipped += 1,
            Ok(Replay::Done) => {}
            Ok(Replay::Stopped(_)) | Err(_) => break,
        }
    }
    Ok(batch)
}
