//! The audit log through the API: who asked to change what, when, from where, answered how.

use chrono::{DateTime, Utc};
use serde::Serialize;

use tasker_shared::api::AuditPage;

use crate::{Client, Error, decode};

/// Filter for [`Client::audit`]; every field is optional.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditQuery {
    /// Rows naming this namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Rows of the token of this name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Rows of this route pattern (`/v1/tasks/{id}/cancel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Rows of this method (`POST`, `PUT`, `PATCH`, `DELETE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Requests that arrived at or after this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Requests that arrived before this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Rows per page, 1 to 500 (50 by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// The previous page's `next_before`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

impl Client {
    /// A page of the audit log, newest first (an admin token; one scoped to namespaces sees
    /// the rows of its namespaces).
    pub async fn audit(&self, query: &AuditQuery) -> Result<AuditPage, Error> {
        let req = self.http.get(format!("{}/v1/audit", self.base));
        decode(req.query(query).send().await?).await
    }
}
