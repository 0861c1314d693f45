//! A port that accepts connections and never answers: a sink (a webhook receiver, an SMTP
//! server) that hangs. Each connection is held open for as long as the black hole lives, and
//! counted. And [`waiting_rule`], the alert rule the tests and benches point at such sinks.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use tasker_client::{AlertCondition, AlertKind, AlertSink, PutAlert};

/// An alert rule of `namespace` that fires while one of its steps has waited longer than 1 s,
/// telling the webhook at `url` (a repeat held back for an hour).
pub fn waiting_rule(namespace: &str, url: &str) -> PutAlert {
    PutAlert {
        namespace: namespace.into(),
        when: AlertCondition {
            kind: AlertKind::StepsWaiting,
            template: None,
            schedule: None,
            count: None,
            within: None,
            longer_than: Some("1s".into()),
        },
        sink: AlertSink::Webhook { url: url.into() },
        secret: None,
        suppress: Some("1h".into()),
    }
}

/// A running black hole on a free loopback port.
#[derive(Debug)]
pub struct BlackHole {
    /// `http://127.0.0.1:<port>/hook`.
    pub url: String,
    accepted: watch::Receiver<usize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl BlackHole {
    pub async fn start() -> anyhow::Result<BlackHole> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let (count, accepted) = watch::channel(0usize);
        let accepting = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
                count.send_replace(held.len());
            }
        });
        Ok(BlackHole {
            url,
            accepted,
            accepting,
        })
    }

    /// The connections accepted so far.
    pub fn accepted(&self) -> usize {
        *self.accepted.borrow()
    }

    /// Waits until `n` connections were accepted, at most `within`.
    pub async fn until(&mut self, n: usize, within: Duration) -> anyhow::Result<()> {
        let waited = tokio::time::timeout(within, self.accepted.wait_for(|seen| *seen >= n))
            .await
            .map(|seen| seen.is_ok());
        match waited {
            Ok(true) => Ok(()),
            Ok(false) => anyhow::bail!("the black hole stopped"),
            Err(_) => anyhow::bail!("{} of {n} connections within {within:?}", self.accepted()),
        }
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        // Its connections close with it.
        self.accepting.abort();
    }
}
