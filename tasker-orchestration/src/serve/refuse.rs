//! A connection over a cap, answered with an HTTP error naming the bound and closed, without
//! reaching the application: 503 when every connection this orchestrator serves is taken
//! (`orchestrator.max_connections`), 429 when its address holds its share
//! (`orchestrator.max_connections_per_peer`).

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Which cap a connection met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    Total(usize),
    PerPeer(usize),
}

/// How long a refused connection gets to send its request head and read the answer.
pub const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Most bytes of a refused connection's request read before answering.
const HEAD_MAX: usize = 16 * 1024;

impl Cap {
    /// The configuration key of the bound.
    pub fn bound(self) -> &'static str {
        match self {
            Cap::Total(_) => "orchestrator.max_connections",
            Cap::PerPeer(_) => "orchestrator.max_connections_per_peer",
        }
    }

    /// The whole HTTP answer.
    pub fn answer(self) -> Vec<u8> {
        let bound = self.bound();
        let (status, limit, message) = match self {
            Cap::Total(limit) => (
                "503 Service Unavailable",
                limit,
                format!(
                    "this orchestrator serves {limit} connections at once, all taken; try again"
                ),
            ),
            Cap::PerPeer(limit) => (
                "429 Too Many Requests",
                limit,
                format!(
                    "this address holds {limit} connections, the most one address may; close one"
                ),
            ),
        };
        let body = json!({ "error": {
            "code": "too_many_connections",
            "message": message,
            "details": { "bound": bound, "limit": limit },
        }})
        .to_string();
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             retry-after: 1\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

/// Reads the request head (so closing does not reset the connection under the client's
/// answer), writes the answer and closes, all within [`REFUSAL_TIME`].
pub async fn refuse<I>(mut io: I, cap: Cap)
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let exchange = async {
        let mut head = Vec::with_capacity(1024);
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < HEAD_MAX {
            let n = io.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        io.write_all(&cap.answer()).await?;
        io.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_TIME, exchange).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refused_client_reads_a_json_error_naming_the_bound() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let refusing = tokio::spawn(refuse(server, Cap::PerPeer(256)));
        client
            .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        refusing.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
        let body: serde_json::Value =
            serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"]["code"], "too_many_connections");
        assert_eq!(
            body["error"]["details"]["bound"],
            "orchestrator.max_connections_per_peer"
        );
    }
}
