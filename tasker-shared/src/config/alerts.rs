//! Where alert rules' email notices go out (`[alerts]`): an SMTP server the orchestrators reach.
//! Webhook and Slack sinks need nothing here (their URLs are the rules' own).

use serde::{Deserialize, Serialize};

use super::Error;

/// The SMTP server of email sinks (`[alerts]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertsConfig {
    /// `smtp://host:port` (plain: a relay on a trusted network), `smtp://host:587?tls=required`
    /// (STARTTLS) or `smtps://host:465`, with `user:password@` when the server wants a login.
    /// Unset: a rule may not have an email sink.
    pub smtp_url: Option<String>,
    /// The `From:` of every notice.
    pub smtp_from: String,
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
        Ok(())
    }
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self {
            smtp_url: None,
            smtp_from: "tasker@localhost".into(),
        }
    }
}
