//! Task templates through the API: list, show, register.

use std::time::Duration;

use serde::Deserialize;

use crate::client::{Client, Registered, decode};
use crate::error::Error;
use tasker_shared::api::RegisteredTemplate as TemplateInfo;

impl Client {
    /// Registered template versions, optionally of one namespace and name.
    pub async fn templates(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Vec<TemplateInfo>, Error> {
        #[derive(Deserialize)]
        struct Templates {
            templates: Vec<TemplateInfo>,
        }
        let mut query = Vec::new();
        query.extend(namespace.map(|n| ("namespace", n)));
        query.extend(name.map(|n| ("name", n)));
        let resp = self
            .http
            .get(format!("{}/v1/templates", self.base))
            .query(&query)
            .send()
            .await?;
        Ok(decode::<Templates>(resp).await?.templates)
    }

    /// One template version; the newest registered when `version` is `None`.
    pub async fn template(
        &self,
        namespace: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<TemplateInfo, Error> {
        let mut req = self
            .http
            .get(format!("{}/v1/templates/{namespace}/{name}", self.base));
        if let Some(v) = version {
            req = req.query(&[("version", v)]);
        }
        decode(req.send().await?).await
    }

    /// Registers a template from its YAML (or JSON) text. `source` names the file in the
    /// server's error messages; `registered_by` is recorded with the version. A version
    /// registered with another definition fails with `409 template_version_conflict`, an invalid
    /// template with `422 invalid_template` (the message has the file, line and problem).
    pub async fn register_template(
        &self,
        text: &str,
        source: Option<&str>,
        registered_by: Option<&str>,
    ) -> Result<Registered, Error> {
        let mut query = Vec::new();
        query.extend(source.map(|s| ("source", s)));
        query.extend(registered_by.map(|b| ("registered_by", b)));
        let resp = self
            .http
            .post(format!("{}/v1/templates", self.base))
            .query(&query)
            .header("content-type", "application/yaml")
            .body(text.to_owned())
            .timeout(Duration::from_secs(10))
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok(Registered {
            created,
            template: decode(resp).await?,
        })
    }
}
