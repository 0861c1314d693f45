//! Email sinks: a notice as an email to each of the rule's addresses, through the orchestrators'
//! SMTP server (`[alerts] smtp_url`): the summary as the subject, the summary and the notice's
//! JSON as the body.

use lettre::message::{Mailbox, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;

use tasker_shared::config::AlertsConfig;

/// The SMTP server and the sender of every notice.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// The configured server; `None` (logged) when there is none, or it does not read.
    pub fn from_config(config: &AlertsConfig) -> Option<Mailer> {
        let url = config.smtp_url.as_deref()?;
        let from = match config.smtp_from.parse::<Mailbox>() {
            Ok(from) => from,
            Err(e) => {
                tracing::error!(error = %e, "alerts.smtp_from does not read: no email notices");
                return None;
            }
        };
        match AsyncSmtpTransport::<Tokio1Executor>::from_url(url) {
            Ok(builder) => Some(Mailer {
                transport: builder
                    .timeout(Some(std::time::Duration::from_millis(config.timeout_ms)))
                    .build(),
                from,
            }),
            Err(e) => {
                tracing::error!(error = %e, "alerts.smtp_url does not read: no email notices");
                None
            }
        }
    }

    /// Sends `notice` to `to`; Err: why the server did not take it.
    pub async fn send(&self, to: &[String], notice: &Value) -> Result<(), String> {
        let summary = notice["summary"].as_str().unwrap_or("Tasker alert");
        let mut message = Message::builder()
            .from(self.from.clone())
            .subject(summary.chars().take(200).collect::<String>());
        for address in to {
            let mailbox = address
                .parse::<Mailbox>()
                .map_err(|e| format!("{address:?} is not an email address: {e}"))?;
            message = message.to(mailbox);
        }
        let pretty = serde_json::to_string_pretty(notice).unwrap_or_default();
        let email = message
            .header(ContentType::TEXT_PLAIN)
            .body(format!("{summary}\n\n{pretty}\n"))
            .map_err(|e| format!("the email does not build: {e}"))?;
        self.transport
            .send(email)
            .await
            .map(drop)
            .map_err(|e| format!("the SMTP server did not take it: {e}"))
    }
}
