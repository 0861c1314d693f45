//! How alert rules' notices go out (`[alerts]`): the SMTP server of email sinks, and how long a
//! sink may take. Webhook and Slack sinks need no address here (their URLs are the rules' own).

use serde::{Deserialize, Serialize};

use super::Error;

/// The SMTP server of email sinks and every sink's timeout (`[alerts]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertsConfig {
    /// `smtp://host:port` (plain: a relay on a trusted network), `smtp://host:587?tls=required`
    /// (STARTTLS) or `smtps://host:465`, with `user:password@` when the server wants a login.
    /// Unset: a rule may not have an email sink.
    pub smtp_url: Option<String>,
    /// The `From:` of every notice.
    pub smtp_from: String,
    /// How long one delivery of a notice may take (a webhook's answer, the SMTP server's
    /// acceptance) before it counts as a failed try: 100 ms to 5 minutes, 5 s by default.
    pub timeout_ms: u64,
}

impl AlertsConfig {
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(url) = &self.smtp_url
            && !(url.starts_with("smtp://") || url.starts_with("smtps://"))
        {
            return Err(Error::Invalid {
                key: "alerts.smtp_url",
                problem: "must start with smtp:// or smtps://".into(),
            });
        }
        if !self.smtp_from.contains('@') || self.smtp_from.chars().any(char::is_control) {
            return Err(Error::Invalid {
                key: "alerts.smtp_from",
                problem: "must be an email address".into(),
            });
        }
        if !(100..=300_000).contains(&self.timeout_ms) {
            return Err(Error::Invalid {
                key: "alerts.timeout_ms",
                problem: "must be 100 to 300000 (5 minutes)".into(),
            });
        }
        Ok(())
    }
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self {
            smtp_url: None,
            smtp_from: "tasker@localhost".into(),
            timeout_ms: 5_000,
        }
    }
}
