//! Alert notices on their way out: taken a batch at a time (leased, so one whose orchestrator
//! died is taken up by another), sent side by side, each bounded by [`TIMEOUT`], retried with
//! doubling backoff (1 s, 2 s, 4 s… at most 5 min) and given up on after [`ATTEMPTS`] tries. A
//! webhook sink's request is signed as Tasker's generic webhooks are (so a Tasker webhook of
//! that format takes it); a Slack sink gets `{"text": summary}`; an email sink an email
//! ([`super::email`]).

use std::time::Duration;

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use tasker_shared::api::{AlertSink, WebhookFormat};

use super::email::Mailer;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::Outgoing;

/// How long one delivery may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Tries of one notice before it is given up on.
pub const ATTEMPTS: i32 = 8;
/// Notices taken at once.
const BATCH: i64 = 32;
/// How long a taken notice stays with this orchestrator (well past [`TIMEOUT`]).
const LEASE_SECS: f64 = 30.0;
/// How often it looks for notices due (retries come due without a wake-up).
const POLL: Duration = Duration::from_millis(500);

/// The sender loop: woken by a check that queued notices, else every [`POLL`].
pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    install_crypto_provider();
    let http = match reqwest::Client::builder().timeout(TIMEOUT).build() {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "no HTTP client for alert notices: none will be sent");
            return;
        }
    };
    let sinks = Sinks {
        http,
        mailer: Mailer::from_config(&shared.config.alerts),
    };
    let mut purged = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(POLL) => {}
            () = shared.alert_notices.notified() => {}
        }
        loop {
            let taken = match shared.store.take_notices(BATCH, LEASE_SECS).await {
                Ok(taken) => taken,
                Err(e) => {
                    tracing::warn!(error = %e, "could not take alert notices");
                    break;
                }
            };
            let done = taken.len() as i64;
            join_all(taken.iter().map(|n| deliver(&shared, &sinks, n))).await;
            if done < BATCH {
                break;
            }
        }
        if purged.elapsed() > Duration::from_secs(60) {
            purged = tokio::time::Instant::now();
            if let Err(e) = shared.store.purge_notices().await {
                tracing::warn!(error = %e, "could not purge old alert notices");
            }
        }
    }
}

/// The process's rustls provider, as every reqwest client of Tasker's needs before its first.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What notices go out through.
struct Sinks {
    http: reqwest::Client,
    /// `None`: no SMTP server configured (an email sink's notice fails, saying so).
    mailer: Option<Mailer>,
}

/// Sends one notice and records how it went.
async fn deliver(shared: &Shared, sinks: &Sinks, n: &Outgoing) {
    let outcome = match (&n.sink.0, &sinks.mailer) {
        (AlertSink::Email { to }, Some(mailer)) => mailer.send(to, &n.payload).await,
        (AlertSink::Email { .. }, None) => {
            Err("no SMTP server is configured (`[alerts] smtp_url`)".to_owned())
        }
        _ => post(&sinks.http, n).await,
    };
    let sink = n.sink.kind();
    let recorded = match &outcome {
        Ok(()) => {
            ::metrics::counter!(m::ALERTS_SENT.name, "sink" => sink, "outcome" => "sent")
                .increment(1);
            shared.store.notice_sent(n).await
        }
        Err(e) => {
            let retry = (n.attempts < ATTEMPTS)
                .then(|| 2f64.powi(n.attempts.saturating_sub(1).min(9)).min(300.0));
            let outcome = if retry.is_some() { "retried" } else { "failed" };
            ::metrics::counter!(m::ALERTS_SENT.name, "sink" => sink, "outcome" => outcome)
                .increment(1);
            tracing::warn!(alert = %n.rule, attempt = n.attempts, error = %e,
                given_up = retry.is_none(), "an alert notice was not delivered");
            shared.store.notice_failed(n, e, retry).await
        }
    };
    if let Err(e) = recorded {
        tracing::warn!(alert = %n.rule, error = %e, "could not record an alert delivery");
    }
}

/// The request a sink gets; Err: why it did not take it.
async fn post(http: &reqwest::Client, n: &Outgoing) -> Result<(), String> {
    let (url, body, headers) = match &n.sink.0 {
        AlertSink::Webhook { url } => {
            let body = serde_json::to_vec(&n.payload).map_err(|e| e.to_string())?;
            let secret = n.secret.as_deref().unwrap_or_default();
            let now = chrono::Utc::now().timestamp();
            let headers = crate::webhook_sign::sign(WebhookFormat::Generic, secret, now, &body);
            (url, body, headers)
        }
        AlertSink::Slack { url } => {
            let text = n.payload["summary"].as_str().unwrap_or_default();
            let body = serde_json::to_vec(&serde_json::json!({ "text": text }))
                .map_err(|e| e.to_string())?;
            (url, body, Vec::new())
        }
        AlertSink::Email { .. } => return Err("an email sink has no URL".into()),
    };
    let mut req = http
        .post(url.as_str())
        .header("content-type", "application/json")
        .header("user-agent", concat!("tasker/", env!("CARGO_PKG_VERSION")))
        .body(body);
    for (name, value) in headers {
        req = req.header(name, value);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!("the sink answered {}", resp.status())),
        Err(e) if e.is_timeout() => Err(format!("the sink did not answer within {TIMEOUT:?}")),
        Err(e) => Err(format!("the sink could not be reached: {e}")),
    }
}
