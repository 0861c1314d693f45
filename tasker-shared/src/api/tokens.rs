//! API tokens: what is listed, asked for and answered once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// An API token as listed: never the token itself.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: i64,
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub created_by: Option<String>,
    /// The namespace patterns it covers (`shop`, `shop_*`); absent: every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// When it stops working; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// Live API tokens.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

/// `POST /v1/tokens`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// Namespace patterns the token covers (`*` is any run of characters); absent: every
    /// namespace the creating token covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// Seconds until it stops working (at most ten years); absent: it never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<u64>,
}

/// A token just created: the only time it is shown.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedToken {
    pub id: i64,
    pub name: String,
    pub scope: String,
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// The RabbitMQ user whose results speak for this token (a worker's broker user of the
    /// same name); absent when that name already spoke for a token of namespaces its creator
    /// does not cover (docs/auth.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_user: Option<String>,
}
