//! What an alert rule watches and where it tells ([`AlertCondition`], [`AlertSink`]): the parts
//! of a rule shared by the API (`crate::api`, `PUT /v1/alerts/{name}`) and by alert files
//! (`crate::template::AlertsFile`, `tasker alerts apply`), below both.

use serde::{Deserialize, Serialize};

/// What an alert rule watches, in its namespace.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// Tasks (of `template`, else of any) that ended in `error` within `within`.
    Failures,
    /// Tasks (of `template`, else of any) whose deadline passed within `within`.
    DeadlinePassed,
    /// Steps waiting now for longer than `longer_than`: for a worker (`enqueued`, not started),
    /// or for a concurrency slot or rate token (`throttled`).
    StepsWaiting,
    /// Schedules (`schedule`, else any) that skipped a fire within `within`.
    ScheduleSkipped,
    /// Dead letters of the namespace first kept within `within`.
    DeadLetters,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Failures => "failures",
            AlertKind::DeadlinePassed => "deadline_passed",
            AlertKind::StepsWaiting => "steps_waiting",
            AlertKind::ScheduleSkipped => "schedule_skipped",
            AlertKind::DeadLetters => "dead_letters",
        }
    }
}

/// When a rule fires: `count` or more of `kind` (in the window `within`, or waiting longer than
/// `longer_than` now).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertCondition {
    pub kind: AlertKind,
    /// Only tasks of this template (`failures`, `deadline_passed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Only this schedule (`schedule_skipped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// How many make it fire; 1 by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The window counted back from now (every kind but `steps_waiting`): `1m`, `1h`…; `5m` by
    /// default, at most 1 day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
    /// How long a step has waited to count (`steps_waiting`): `5m` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longer_than: Option<String>,
}

/// Where a rule's notices go.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AlertSink {
    /// `POST <url>` of the notice as JSON, signed as Tasker's generic webhooks are:
    /// `X-Tasker-Timestamp` and `X-Tasker-Signature: v1=<hex>`, the HMAC-SHA256 of
    /// `<timestamp>.<body>` with the rule's secret.
    Webhook { url: String },
    /// `POST <url>` of `{"text": …}`, what Slack's incoming webhooks (and Mattermost's,
    /// Discord's `/slack`) take.
    Slack { url: String },
    /// An email to each of `to` (1 to 20 addresses) through the orchestrators' SMTP server
    /// (`[alerts] smtp_url`): the summary as its subject, the notice as its body.
    Email { to: Vec<String> },
}

impl AlertSink {
    /// Where its notices go: the URL, or the addresses.
    pub fn target(&self) -> String {
        match self {
            AlertSink::Webhook { url } | AlertSink::Slack { url } => url.clone(),
            AlertSink::Email { to } => to.join(", "),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            AlertSink::Webhook { .. } => "webhook",
            AlertSink::Slack { .. } => "slack",
            AlertSink::Email { .. } => "email",
        }
    }
}
