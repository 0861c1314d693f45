//! A TCP proxy between a client and an orchestrator that a test stops and starts again on the
//! same port: stopped, its port refuses connections and every connection through it is cut, as
//! when the orchestrator (or a load balancer in front of it) restarts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A running (or stopped) proxy to one upstream address.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    /// Every byte clients sent through it, in arrival order (per connection, not interleaved
    /// within a read): what a test waits on to know a request is in flight.
    sent: Arc<watch::Sender<Vec<u8>>>,
    running: Option<CancellationToken>,
}

impl Proxy {
    /// A proxy on a free loopback port to `upstream` (`http://host:port`, or `host:port`).
    pub async fn start(upstream: &str) -> anyhow::Result<Proxy> {
        let host = upstream.trim_start_matches("http://").trim_end_matches('/');
        let upstream: SocketAddr = tokio::net::lookup_host(host)
            .await?
            .next()
            .with_context(|| format!("{host} resolves to nothing"))?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let mut proxy = Proxy {
            addr: listener.local_addr()?,
            upstream,
            sent: Arc::new(watch::channel(Vec::new()).0),
            running: None,
        };
        proxy.serve(listener);
        Ok(proxy)
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes its port and cuts every connection through it.
    pub fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.cancel();
        }
    }

    /// Listens again on the same port (after [`Proxy::stop`]).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.running.is_none(), "the proxy is running");
        let listener = TcpListener::bind(self.addr)
            .await
            .with_context(|| format!("binding {} again", self.addr))?;
        self.serve(listener);
        Ok(())
    }

    /// How many times `needle` occurs in what clients have sent so far.
    pub fn sent_count(&self, needle: &str) -> usize {
        count(&self.sent.borrow(), needle.as_bytes())
    }

    /// Waits (up to `timeout`) until clients have sent `needle` at least `n` times in all.
    pub async fn until_sent(
        &self,
        needle: &str,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let mut sent = self.sent.subscribe();
        tokio::time::timeout(
            timeout,
            sent.wait_for(|bytes| count(bytes, needle.as_bytes()) >= n),
        )
        .await
        .with_context(|| {
            format!("clients did not send {needle:?} {n} times within {timeout:?}")
        })??;
        Ok(())
    }

    fn serve(&mut self, listener: TcpListener) {
        let cancel = CancellationToken::new();
        self.running = Some(cancel.clone());
        let (upstream, sent) = (self.upstream, self.sent.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = cancel.cancelled() => return, // drops the listener: the port closes
                    accepted = listener.accept() => accepted,
                };
                let Ok((client, _)) = accepted else { continue };
                let (cancel, sent) = (cancel.clone(), sent.clone());
                tokio::spawn(async move {
                    // Cancelled: both sockets drop, and the client's connection is cut.
                    tokio::select! {
                        () = cancel.cancelled() => {}
                        _ = forward(client, upstream, &sent) => {}
                    }
                });
            }
        });
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies both ways between `client` and a new connection to `upstream`, recording what the
/// client sends.
async fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    sent: &watch::Sender<Vec<u8>>,
) -> std::io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = client_read.read(&mut buf).await?;
            if n == 0 {
                return server_write.shutdown().await;
            }
            server_write.write_all(&buf[..n]).await?;
            sent.send_modify(|all| all.extend_from_slice(&buf[..n]));
        }
    };
    let down = tokio::io::copy(&mut server_read, &mut client_write);
    tokio::try_join!(up, down).map(drop)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}
