//! Operations: readiness.

use serde::{Deserialize, Serialize};

/// `GET /ready`: whether this orchestrator reaches PostgreSQL and RabbitMQ.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    pub database: bool,
    pub broker: bool,
    /// Step messages waiting for the broker.
    pub dispatch_backlog: usize,
}
