//! The wire type of a registered template version.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::template::TaskTemplate;

/// A registered template version, as the API answers and clients read it (one definition of
/// the wire type for the server and every Rust client).
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredTemplate {
    pub id: uuid::Uuid,
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub description: Option<String>,
    /// The template as stored: the JSON form of its YAML.
    pub definition: Value,
    pub registered_at: chrono::DateTime<chrono::Utc>,
    /// The worker, user or orchestrator that registered it (`None` for versions registered
    /// before this was recorded).
    pub registered_by: Option<String>,
    /// The steps no live worker serves (namespace and handler): one template answers it,
    /// lists leave it out (`null`).
    #[serde(default)]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    pub unserved_steps: Option<Vec<super::workers::UnservedStep>>,
}

impl RegisteredTemplate {
    /// `namespace/name@version`.
    pub fn key(&self) -> String {
        format!("{}/{}@{}", self.namespace, self.name, self.version)
    }

    /// The stored definition, parsed.
    pub fn template(&self) -> Result<TaskTemplate, serde_json::Error> {
        serde_json::from_value(self.definition.clone())
    }
}

/// Registered template versions.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateList {
    pub templates: Vec<RegisteredTemplate>,
}
