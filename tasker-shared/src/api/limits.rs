//! Concurrency and rate keys, and pausing a rate key.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A concurrency key: at most `limit` steps holding its slots at once.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyLimit {
    /// `<namespace>/<template>:<value>` (a template's limit) or
    /// `<namespace>/<template>/<step>:<value>` (a step's).
    pub key: String,
    pub limit: i32,
    /// Slots held by steps in flight.
    pub in_use: i32,
    /// Steps waiting for a slot.
    pub throttled: i64,
    /// When a step last claimed a slot of it.
    pub used_at: DateTime<Utc>,
}

/// `GET /v1/concurrency-limits`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyLimitList {
    pub limits: Vec<ConcurrencyLimit>,
    /// Set when there may be more: pass it as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// A rate key: at most `limit` step starts per `per_ms`, `burst` of them at once.
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    pub key: String,
    pub limit: i32,
    pub per_ms: i64,
    pub burst: i32,
    /// No step of this key starts before this time (an operator's pause).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub paused_until: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub pause_note: Option<String>,
    /// Who paused it (the token's name).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub paused_by: Option<String>,
    /// Steps waiting for a token of it (or for its pause to end).
    pub throttled: i64,
    /// When a step last took a token of it.
    pub used_at: DateTime<Utc>,
}

/// `GET /v1/rate-limits`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimitList {
    pub limits: Vec<RateLimit>,
    /// Set when there may be more: pass it as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `POST /v1/rate-limits/{key}/pause`: no step of the key starts before `until`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseRateLimit {
    /// In the future, at most a year ahead.
    pub until: DateTime<Utc>,
    /// Why (shown with the key), at most 1,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
