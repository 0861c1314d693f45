//! Serving the API over HTTP/1.1 (plain or TLS) with every connection's cost bounded before it
//! is spent: at most `orchestrator.max_connections` at once, and at most
//! `max_connections_per_peer` from one address (past either, the connection is answered 503
//! or 429 `too_many_connections` naming the bound, and closed: [`refuse`]); a request's headers
//! must arrive within `header_timeout_ms` (also how long an idle keep-alive connection is
//! kept), its body whole within `body_deadline_ms`, never silent for `body_timeout_ms`, and at
//! `body_min_bytes_per_second` at least ([`body`]); a TLS handshake within the header timeout.
//! A client that connects and says nothing holds a connection for the header timeout, one
//! that trickles a body for about a second.
//!
//! On shutdown it stops accepting, lets requests in progress finish (event streams end with
//! the orchestrator), and closes idle connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::slots::Slots;

pub mod body;
pub mod refuse;

use body::{Pace, PacedBody};
use refuse::{Cap, refuse};

/// The bounds every connection is served within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
    pub header_timeout: Duration,
    pub body: Pace,
}

impl Limits {
    pub fn from_config(o: &tasker_shared::config::OrchestratorConfig) -> Self {
        Limits {
            max_connections: o.max_connections.max(1),
            max_connections_per_peer: o.max_connections_per_peer.max(1),
            header_timeout: Duration::from_millis(o.header_timeout_ms.max(1)),
            body: Pace {
                silence: Duration::from_millis(o.body_timeout_ms.max(1)),
                deadline: Duration::from_millis(o.body_deadline_ms.max(1)),
                min_rate: o.body_min_bytes_per_second,
            },
        }
    }
}

/// Refusals being answered at once; past this, a connection over a cap is closed unanswered.
const REFUSALS: usize = 256;

/// Longest graceful shutdown waits for requests in progress before dropping them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Serves `app` on `listener` (over TLS with `tls`) until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(REFUSALS));
    let peers = Slots::new(limits.max_connections_per_peer);
    let graceful = GracefulShutdown::new();
    let acceptor = tls.map(TlsAcceptor::from);
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment, as axum's loop does.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Small writes go out at once: an event stream writes a chunk at a time to a reader that
        // never answers, whose delayed ACKs would otherwise hold each write back (Nagle) for up
        // to 40 ms — the streams bench's Python → TypeScript p99 was that sawtooth.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "setting TCP_NODELAY failed");
        }
        let acceptor = acceptor.clone();
        let held = permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| Cap::Total(limits.max_connections))
            .and_then(|permit| {
                let slot = peers
                    .take(&peer.ip())
                    .ok_or(Cap::PerPeer(limits.max_connections_per_peer))?;
                Ok((permit, slot))
            });
        let (permit, slot) = match held {
            Ok(held) => held,
            Err(cap) => {
                ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name, "bound" => cap.bound())
                    .increment(1);
                if let Ok(answering) = refusals.clone().try_acquire_owned() {
                    tokio::spawn(async move {
                        refused(stream, acceptor, cap, limits).await;
                        drop(answering);
                    });
                }
                continue;
            }
        };
        let (app, watcher) = (app.clone(), graceful.watcher());
        tokio::spawn(async move {
            match acceptor {
                None => connection(stream, peer, app, limits, watcher).await,
                Some(acceptor) => {
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await
                    {
                        Ok(Ok(tls)) => connection(tls, peer, app, limits, watcher).await,
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
            drop((permit, slot));
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!("requests still in progress after {SHUTDOWN_GRACE:?}; stopping anyway");
        }
    }
    Ok(())
}

/// Answers a connection over `cap` (over TLS once the handshake is done) and closes it.
async fn refused(
    stream: tokio::net::TcpStream,
    acceptor: Option<TlsAcceptor>,
    cap: Cap,
    limits: Limits,
) {
    match acceptor {
        None => refuse(stream, cap).await,
        Some(acceptor) => {
            let handshake = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
            if let Ok(Ok(tls)) = handshake.await {
                refuse(tls, cap).await;
            }
        }
    }
}

/// Serves one connection until it closes, its client goes quiet, or shutdown ends it.
async fn connection<I>(io: I, peer: SocketAddr, app: Router, limits: Limits, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let pace = limits.body;
    let service = app.map_request(move |mut req: Request<Incoming>| {
        // Who is on the other end (the audit log records it).
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        req.map(|body| Body::new(PacedBody::new(body, pace)))
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
