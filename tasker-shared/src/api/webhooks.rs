//! Webhooks in: a named endpoint, `POST /v1/webhooks/{name}`, that turns a request another
//! service signed with a shared secret (GitHub, Stripe, or anything that signs with
//! HMAC-SHA256) into an event of one namespace. Its secret is answered once, when Tasker makes
//! it, and never again.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How a webhook's requests are signed, and which event each one makes by default.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// `X-Tasker-Timestamp: <unix seconds>` and `X-Tasker-Signature: v1=<hex>`, the
    /// HMAC-SHA256 of `<timestamp>.<body>`; the event is named after the webhook.
    #[default]
    Generic,
    /// GitHub's `X-Hub-Signature-256: sha256=<hex>` of the body; the event is
    /// `github.<X-GitHub-Event>` with id `X-GitHub-Delivery`.
    Github,
    /// Stripe's `Stripe-Signature: t=<unix seconds>,v1=<hex>` of `<t>.<body>`; the event is
    /// `stripe.<type>` with the body's `id`.
    Stripe,
}

impl WebhookFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookFormat::Generic => "generic",
            WebhookFormat::Github => "github",
            WebhookFormat::Stripe => "stripe",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "generic" => Some(WebhookFormat::Generic),
            "github" => Some(WebhookFormat::Github),
            "stripe" => Some(WebhookFormat::Stripe),
            _ => None,
        }
    }
}

/// The body of `PUT /v1/webhooks/{name}`: a new webhook, or the whole of a changed one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutWebhook {
    /// The namespace its events go to.
    pub namespace: String,
    #[serde(default)]
    pub format: WebhookFormat,
    /// The shared secret, 16 to 256 characters (Stripe's `whsec_…` as Stripe shows it). Left
    /// out: a new webhook gets one made by Tasker (answered this once), a changed one keeps
    /// its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The name of every event it makes, instead of the format's (the webhook's name,
    /// `github.<event>`, `stripe.<type>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// A JSON pointer into the body: the event's key (a string or a number there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A JSON pointer into the body: the event's id, so a delivery sent twice is one event
    /// (GitHub's delivery header and Stripe's `/id` are used when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How far a signed timestamp may be from now (generic and Stripe), 1s to 1h; `5m` by
    /// default. An older one is a replay: `401 stale_signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<String>,
}

/// A webhook as the API shows it: never its secret, but in the answer that made it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    pub name: String,
    pub namespace: String,
    pub format: WebhookFormat,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub event: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub key: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub id: Option<String>,
    pub tolerance_seconds: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Requests it turned into events.
    pub received: i64,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub last_received_at: Option<DateTime<Utc>>,
    /// The secret Tasker made for it: only in the answer of the `PUT` that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `GET /v1/webhooks`: the webhooks of the namespaces the token covers.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
}
