//! Alert notices on their way out: taken as they come due (leased, so one whose orchestrator
//! died is taken up by another) and sent side by side, up to [`IN_FLIGHT`] at once, each
//! bounded by `[alerts] timeout_ms` — a notice never waits for another's sink, so a sink that
//! hangs delays only its own rule's notices — retried with doubling backoff (1 s, 2 s, 4 s… at
//! most 5 min) and given up on after [`ATTEMPTS`] tries. A webhook sink's request is signed as
//! Tasker's generic webhooks are (so a Tasker webhook of that format takes it); a Slack sink
//! gets `{"text": summary}`; an email sink an email ([`super::email`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use tasker_shared::api::{AlertSink, WebhookFormat};

use super::email::Mailer;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::Outgoing;

/// Tries of one notice before it is given up on.
pub const ATTEMPTS: i32 = 8;
/// Notices being sent at once by one orchestrator.
const IN_FLIGHT: usize = 64;
/// How long a taken notice stays with this orchestrator beyond its sink's timeout.
const LEASE_MARGIN_SECS: f64 = 30.0;
/// How often it looks for notices due (retries come due without a wake-up).
const POLL: Duration = Duration::from_millis(500);

/// The sender loop: woken by a check that queued notices, by a delivery that ended (a place
/// freed), else every [`POLL`]. Its deliveries are tasks of its own set: they end with it.
pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    install_crypto_provider();
    let timeout = Duration::from_millis(shared.config.alerts.timeout_ms);
    let http = match reqwest::Client::builder().timeout(timeout).build() {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "no HTTP client for alert notices: none will be sent");
            return;
        }
    };
    let sinks = Arc::new(Sinks {
        http,
        mailer: Mailer::from_config(&shared.config.alerts),
        timeout,
    });
    let lease = timeout.as_secs_f64() + LEASE_MARGIN_SECS;
    let mut sending = JoinSet::new();
    let mut purged = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(POLL) => {}
            () = shared.alert_notices.notified() => {}
            Some(_) = sending.join_next(), if !sending.is_empty() => {}
        }
        while sending.try_join_next().is_some() {}
        let room = IN_FLIGHT.saturating_sub(sending.len());
        if room > 0 {
            match shared.store.take_notices(room as i64, lease).await {
                Ok(taken) => {
                    for n in taken {
                        let (shared, sinks) = (shared.clone(), sinks.clone());
                        sending.spawn(async move { deliver(&shared, &sinks, &n).await });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not take alert notices"),
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
    /// How long one delivery may take (`[alerts] timeout_ms`).
    timeout: Duration,
}

/// Sends one notice and records how it went.
async fn deliver(shared: &Shared, sinks: &Sinks, n: &Outgoing) {
    let outcome = match (&n.sink.0, &sinks.mailer) {
        (AlertSink::Email { to }, Some(mailer)) => {
            match tokio::time::timeout(sinks.timeout, mailer.send(to, &n.payload)).await {
                Ok(sent) => sent,
                Err(_) => Err(format!(
                    "the SMTP server did not take it within {:?}",
                    sinks.timeout
                )),
            }
        }
        (AlertSink::Email { .. }, None) => {
            Err("no SMTP server is configured (`[alerts] smtp_url`)".to_owned())
        }
        _ => post(sinks, n).await,
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
async fn post(sinks: &Sinks, n: &Outgoing) -> Result<(), String> {
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
    let mut req = sinks
        .http
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
        Err(e) if e.is_timeout() => Err(format!(
            "the sink did not answer within {:?}",
            sinks.timeout
        )),
        Err(e) => Err(format!("the sink could not be reached: {e}")),
    }
}
