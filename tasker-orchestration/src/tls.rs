//! The API over TLS (`orchestrator.tls_cert_file` / `tls_key_file`): rustls with the ring
//! provider, HTTP/1.1.
//!
//! [`Listener`] hands axum connections whose handshake is done. Handshakes run in tasks of their
//! own, each bounded by `HANDSHAKE_TIMEOUT`, so a client that connects and says nothing never
//! holds up the others.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Longest a client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections whose handshake is done, waiting for axum to take them.
const READY_MAX: usize = 64;

/// A certificate or key that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("TLS: {0}")]
pub struct Error(String);

/// The server configuration from a PEM certificate chain and its private key.
pub fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>, Error> {
    let certs = tasker_shared::tls::certificates(cert_file).map_err(Error)?;
    let key = tasker_shared::tls::private_key(key_file).map_err(Error)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            Error(format!(
                "{} and {}: {e}",
                cert_file.display(),
                key_file.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts TCP connections and yields them once their TLS handshake is done. Dropping it (axum
/// does when it stops serving) stops accepting.
#[derive(Debug)]
pub struct Listener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl Listener {
    /// Must be called inside a tokio runtime: the accept loop runs as a task of its own.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> io::Result<Listener> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, ready) = mpsc::channel(READY_MAX);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    () = tx.closed() => return,
                    accepted = tcp.accept() => match accepted {
                        Ok(c) => c,
                        Err(e) => {
                            // Out of file descriptors and the like: axum's own loop waits too.
                            tracing::warn!(error = %e, "accepting a connection failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Listener { ready, local })
    }
}

impl axum::serve::Listener for Listener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop ended, which it does only once this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
