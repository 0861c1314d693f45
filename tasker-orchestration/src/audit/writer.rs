//! The audit log's writer: a task that appends whatever rows have arrived, up to [`BATCH`], in
//! one statement, then looks again (batches form from load, never from a timer: an idle
//! orchestrator writes a lone row at once). An unreachable database is waited out with the
//! rows held; a row PostgreSQL refuses is dropped alone, never with its batch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::Entry;
use crate::metrics as m;
use crate::store::{self, Store};

/// Most rows one statement appends.
const BATCH: usize = 1_000;
/// Most rows held unwritten (the database unreachable); a row past that is dropped, counted
/// and logged.
pub const MAX_PENDING: usize = 65_536;
/// The longest a graceful stop waits for the rows held to be written.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Where the API hands its audit rows; cheap to clone.
#[derive(Debug, Clone)]
pub struct Audit {
    tx: mpsc::Sender<Entry>,
    dropped: Arc<AtomicU64>,
    written: watch::Receiver<u64>,
    /// Fired by [`Audit::stop`]: write what is held, then end.
    stopping: CancellationToken,
    stopped: watch::Receiver<bool>,
}

impl Audit {
    /// Starts the writer; it runs until [`Audit::stop`].
    pub fn start(store: Store) -> Audit {
        let (tx, rx) = mpsc::channel(MAX_PENDING);
        let (written_tx, written) = watch::channel(0);
        let (stopped_tx, stopped) = watch::channel(false);
        let dropped = Arc::new(AtomicU64::new(0));
        let stopping = CancellationToken::new();
        let writer = Writer {
            store,
            rx,
            dropped: dropped.clone(),
            written: written_tx,
            backoff: Backoff::default(),
        };
        tokio::spawn(writer.run(stopping.clone(), stopped_tx));
        Audit {
            tx,
            dropped,
            written,
            stopping,
            stopped,
        }
    }

    /// Hands over one request's row; never waits.
    pub fn record(&self, entry: Entry) {
        if self.tx.try_send(entry).is_err() {
            // Counted now, logged by the writer (once per batch, not once per row).
            self.dropped.fetch_add(1, Ordering::Relaxed);
            ::metrics::counter!(m::AUDIT_DROPPED.name).increment(1);
        }
    }

    /// How many rows this orchestrator has written so far, to wait on (tests).
    pub fn written(&self) -> watch::Receiver<u64> {
        self.written.clone()
    }

    /// Writes every row held (for at most [`STOP_GRACE`]) and ends the writer: once the API no
    /// longer answers anything.
    pub async fn stop(&self) {
        self.stopping.cancel();
        let mut stopped = self.stopped.clone();
        if tokio::time::timeout(STOP_GRACE, stopped.wait_for(|s| *s))
            .await
            .is_err()
        {
            tracing::error!(
                "audit log: rows still unwritten after {STOP_GRACE:?} at stop; they are lost"
            );
        }
    }
}

struct Writer {
    store: Store,
    rx: mpsc::Receiver<Entry>,
    dropped: Arc<AtomicU64>,
    written: watch::Sender<u64>,
    backoff: Backoff,
}

impl Writer {
    async fn run(mut self, stopping: CancellationToken, stopped: watch::Sender<bool>) {
        let mut rows = Vec::with_capacity(BATCH);
        loop {
            if rows.is_empty() {
                tokio::select! {
                    n = self.rx.recv_many(&mut rows, BATCH) => if n == 0 { break },
                    () = stopping.cancelled() => break,
                }
            }
            self.report_drops();
            if !self.write(&mut rows).await {
                tokio::select! {
                    () = tokio::time::sleep(self.backoff.next()) => {}
                    () = stopping.cancelled() => break,
                }
            }
        }
        // Stopping: what is held, and what arrived meanwhile, with a few tries each batch.
        self.rx.close();
        while let Ok(row) = self.rx.try_recv() {
            rows.push(row);
        }
        let mut tries = 0;
        while !rows.is_empty() {
            if self.write_some(&mut rows).await {
                tries = 0;
            } else if tries < 3 {
                tries += 1;
                tokio::time::sleep(self.backoff.next()).await;
            } else {
                self.lost(rows.len() as u64, "the database is unreachable at stop");
                rows.clear();
            }
        }
        self.report_drops();
        let _ = stopped.send(true);
    }

    /// Writes up to [`BATCH`] of `rows` (removing what was written or dropped): whether the
    /// database could be reached.
    async fn write_some(&mut self, rows: &mut Vec<Entry>) -> bool {
        let n = rows.len().min(BATCH);
        let mut batch: Vec<Entry> = rows.drain(..n).collect();
        let reached = self.write(&mut batch).await;
        // Unwritten (unreachable): back in front, in order.
        rows.splice(0..0, batch);
        reached
    }

    /// Appends `rows` and empties it: whether the database could be reached (if not, `rows`
    /// is kept for another try). A batch PostgreSQL refuses is written row by row, and a row
    /// it refuses alone is dropped and logged.
    async fn write(&mut self, rows: &mut Vec<Entry>) -> bool {
        match self.store.append_audit(rows).await {
            Ok(n) => self.wrote(n),
            Err(store::Error::Unavailable(e)) => {
                tracing::warn!(error = %e, rows = rows.len(), "audit log: the database is unreachable; holding the rows");
                return false;
            }
            Err(_) => {
                for i in 0..rows.len() {
                    match self.store.append_audit(&rows[i..=i]).await {
                        Ok(n) => self.wrote(n),
                        Err(store::Error::Unavailable(_)) => {
                            rows.drain(..i);
                            return false;
                        }
                        Err(e) => {
                            let row = &rows[i];
                            tracing::error!(error = %e, method = row.method, route = %row.route,
                                status = row.status, "audit log: a row the database refuses was dropped");
                            self.lost(1, "the database refuses it");
                        }
                    }
                }
            }
        }
        rows.clear();
        self.backoff = Backoff::default();
        true
    }

    fn wrote(&self, n: u64) {
        ::metrics::counter!(m::AUDIT_ROWS.name).increment(n);
        self.written.send_modify(|w| *w += n);
    }

    fn lost(&self, n: u64, why: &str) {
        ::metrics::counter!(m::AUDIT_DROPPED.name).increment(n);
        tracing::error!(rows = n, "audit log: rows dropped: {why}");
    }

    /// Logs the rows [`Audit::record`] dropped since the last look (the writer held
    /// [`MAX_PENDING`] already).
    fn report_drops(&self) {
        let n = self.dropped.swap(0, Ordering::Relaxed);
        if n > 0 {
            tracing::error!(
                rows = n,
                "audit log: rows dropped: {MAX_PENDING} were already waiting to be written"
            );
        }
    }
}

/// 100 ms, doubling up to 5 s, between tries while the database is unreachable.
#[derive(Debug)]
struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(Duration::from_millis(100))
    }
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(5));
        now
    }
}
