//! Reads off the primary (`database.read_url`): the API's reads that tolerate a lag (task lists,
//! tasks, steps, history, the cluster's gauges) go to a PostgreSQL streaming replica, so
//! dashboards polling lists take nothing from the database the engine writes to.
//!
//! A caller always sees its own writes. Every request that may write (any method but GET and
//! HEAD) stamps its caller (its `Authorization` header) with the time it was answered, after its
//! commit. A sampler reads the primary's WAL position and the replica's replay position every
//! [`SAMPLE_EVERY`]; a caller whose last write is newer than the first primary position read
//! after it — or than the replica has replayed — reads from the primary. Others read from the
//! replica, and so do they once it has caught up. A replica that stops answering (or lags past
//! [`MAX_LAG`]) sends everyone to the primary until it is back.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::store::Store;

/// How often the primary's and the replica's positions are read.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// A replica further behind than this (or not heard from for this long) serves nobody.
pub const MAX_LAG: Duration = Duration::from_secs(5);

/// Where the API reads: the replica, when one is configured and has replayed the caller's writes.
#[derive(Debug, Clone, Default)]
pub struct Reads {
    replica: Option<Replica>,
}

#[derive(Debug, Clone)]
struct Replica {
    store: Store,
    positions: Arc<Mutex<Positions>>,
}

/// What the sampler last learnt, and the callers' latest writes.
#[derive(Debug, Default)]
struct Positions {
    /// The primary's WAL position, each with the time just before it was read; oldest first.
    primary: VecDeque<(Instant, i64)>,
    /// The position the replica has replayed, and when that was read.
    replayed: Option<(Instant, i64)>,
    /// Each caller's latest write, answered at that time.
    writes: HashMap<u64, Instant>,
}

impl Positions {
    /// Whether the replica has replayed everything committed before `at`.
    fn replayed_since(&self, at: Instant) -> bool {
        let Some((_, replayed)) = self.replayed else {
            return false;
        };
        // The first position read after `at` is at least the commit of what was written then.
        self.primary
            .iter()
            .find(|(read, _)| *read >= at)
            .is_some_and(|(_, lsn)| *lsn <= replayed)
    }

    /// Whether the replica answers and keeps up.
    fn healthy(&self, now: Instant) -> bool {
        let heard = self
            .replayed
            .is_some_and(|(read, _)| now.duration_since(read) < MAX_LAG);
        let behind = self
            .primary
            .iter()
            .find(|(_, lsn)| self.replayed.is_some_and(|(_, r)| *lsn > r))
            .map(|(read, _)| now.duration_since(*read));
        heard && behind.is_none_or(|b| b < MAX_LAG)
    }
}

impl Reads {
    /// Reads on `replica` (connected to `database.read_url`), sampled until `cancel` fires.
    pub fn with_replica(primary: Store, replica: Store, cancel: CancellationToken) -> Reads {
        let replica = Replica {
            store: replica,
            positions: Arc::default(),
        };
        tokio::spawn(sample(primary, replica.clone(), cancel));
        Reads {
            replica: Some(replica),
        }
    }

    /// The store a caller (its `Authorization` header, if any) reads from: the replica unless
    /// it lacks one of the caller's writes, or is down; `primary` otherwise.
    pub fn for_caller<'a>(&'a self, primary: &'a Store, authorization: Option<&[u8]>) -> &'a Store {
        let Some(replica) = &self.replica else {
            return primary;
        };
        let now = Instant::now();
        let mut p = replica.positions.lock().unwrap_or_else(|e| e.into_inner());
        if !p.healthy(now) {
            return primary;
        }
        let key = caller_key(authorization);
        match p.writes.get(&key).copied() {
            Some(at) if !p.replayed_since(at) => primary,
            Some(_) => {
                p.writes.remove(&key);
                &replica.store
            }
            None => &replica.store,
        }
    }

    /// The store for reads nobody wrote just before (the cluster's gauges).
    pub fn lagging<'a>(&'a self, primary: &'a Store) -> &'a Store {
        self.for_caller(primary, Some(b"\0gauges"))
    }

    /// A caller's request that may have written was answered now.
    pub fn wrote(&self, authorization: Option<&[u8]>) {
        if let Some(replica) = &self.replica {
            let mut p = replica.positions.lock().unwrap_or_else(|e| e.into_inner());
            p.writes.insert(caller_key(authorization), Instant::now());
        }
    }

    /// Whether a replica is configured.
    pub fn has_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Whether the replica serves the reads of callers it has caught up with now.
    pub fn replica_serves(&self) -> bool {
        self.replica.as_ref().is_some_and(|r| {
            let p = r.positions.lock().unwrap_or_else(|e| e.into_inner());
            p.healthy(Instant::now())
        })
    }
}

fn caller_key(authorization: Option<&[u8]>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    authorization.unwrap_or_default().hash(&mut h);
    h.finish()
}

/// Reads the primary's WAL position and the replica's replay position every [`SAMPLE_EVERY`];
/// forgets what no decision needs any more.
async fn sample(primary: Store, replica: Replica, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = cancel.cancelled() => return,
        }
        let at = Instant::now();
        let written = primary.wal_position().await;
        let replayed = replica.store.replay_position().await;
        let mut p = replica.positions.lock().unwrap_or_else(|e| e.into_inner());
        match written {
            Ok(lsn) => p.primary.push_back((at, lsn)),
            Err(e) => tracing::debug!(error = %e, "reads: cannot read the primary's WAL position"),
        }
        match replayed {
            Ok(lsn) => p.replayed = Some((Instant::now(), lsn)),
            Err(e) => tracing::debug!(error = %e, "reads: cannot read the replica's position"),
        }
        forget(&mut p, at);
        report(&p);
    }
}

/// The replica's lag and whether it serves, as gauges.
fn report(p: &Positions) {
    use crate::metrics::{READ_REPLICA_LAG, READ_REPLICA_SERVING};
    if let (Some((_, written)), Some((_, replayed))) = (p.primary.back(), p.replayed) {
        metrics::gauge!(READ_REPLICA_LAG.name).set(written.saturating_sub(replayed).max(0) as f64);
    }
    let serving = p.healthy(Instant::now());
    metrics::gauge!(READ_REPLICA_SERVING.name).set(if serving { 1.0 } else { 0.0 });
}

/// Drops the primary positions older than any decision needs, and the writes replayed.
fn forget(p: &mut Positions, now: Instant) {
    let keep = now.checked_sub(MAX_LAG * 2).unwrap_or(now);
    while p.primary.len() > 1 && p.primary.front().is_some_and(|(read, _)| *read < keep) {
        p.primary.pop_front();
    }
    let mut writes = std::mem::take(&mut p.writes);
    writes.retain(|_, at| *at >= keep && !p.replayed_since(*at));
    p.writes = writes;
}
