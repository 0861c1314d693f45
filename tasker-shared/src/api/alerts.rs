//! Alerts out: rules saved by name, one namespace each, that watch a condition of that
//! namespace (failures of a template, deadlines passed, steps waiting, schedule fires skipped,
//! dead letters) and tell a sink — a signed webhook, a Slack-compatible one or an email — when it begins
//! to hold (`firing`) and when it clears (`resolved`), a repeat within the suppression window
//! held back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::alerting::{AlertCondition, AlertKind, AlertSink};

/// The body of `PUT /v1/alerts/{name}`: a new rule, or the whole of a changed one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutAlert {
    pub namespace: String,
    pub when: AlertCondition,
    pub sink: AlertSink,
    /// The webhook sink's secret, 16 to 256 characters. Left out: a new rule gets one made by
    /// Tasker (answered this once), a changed one keeps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// After a notice that it fired, how long another is held back (it resolved and fired
    /// again meanwhile): `15m` by default, `0s` to 1 day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress: Option<String>,
}

/// An alert rule as the API shows it (never its secret, but in the answer that made it), and
/// what it last did.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub name: String,
    pub namespace: String,
    pub when: AlertCondition,
    pub sink: AlertSink,
    pub suppress_seconds: i64,
    /// `firing` or `ok`.
    pub state: String,
    /// What the condition counted at its last check.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub observed: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub checked_at: Option<DateTime<Utc>>,
    /// When it last began to fire, and last cleared.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub fired_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub resolved_at: Option<DateTime<Utc>>,
    /// Notices delivered, given up on (after their retries), and held back by suppression.
    pub sent: i64,
    pub failed: i64,
    pub suppressed: i64,
    /// Why the last delivery failed, or why the rule is not checked (its token revoked).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The secret Tasker made for its webhook sink: only in the answer of the `PUT` that made
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `GET /v1/alerts`: the rules of the namespaces the token covers.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertList {
    pub alerts: Vec<Alert>,
}

/// What a sink receives (a webhook sink: this JSON; a Slack sink: its `summary` as `text`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertNotice {
    pub alert: String,
    pub namespace: String,
    /// `firing` or `resolved`.
    pub state: String,
    pub when: AlertCondition,
    /// What the condition counted, and how many make it fire.
    pub observed: i64,
    pub threshold: i64,
    pub at: DateTime<Utc>,
    /// One line for a person.
    pub summary: String,
}
