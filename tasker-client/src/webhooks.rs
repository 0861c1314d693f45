//! Webhooks (`/v1/webhooks`): endpoints that turn requests other services sign into events of a
//! namespace. Save one (Tasker makes its secret when none is given, shown that once), list,
//! show, remove; a sender posts to it with no token.

use serde_json::Value;

use crate::client::{Client, decode, segment};
use crate::error::Error;
use tasker_shared::api::{PutWebhook, Webhook, WebhookList};

impl Client {
    /// Saves webhook `name`; returns it (with the secret Tasker made, if it made one) and
    /// whether it is new.
    pub async fn put_webhook(
        &self,
        name: &str,
        spec: &PutWebhook,
    ) -> Result<(Webhook, bool), Error> {
        let resp = self
            .http
            .put(self.webhook_url(name))
            .json(spec)
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok((decode(resp).await?, created))
    }

    /// The webhooks of the namespaces the token covers.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/webhooks", self.base))
            .send()
            .await?;
        Ok(decode::<WebhookList>(resp).await?.webhooks)
    }

    /// One webhook, without its secret.
    pub async fn webhook(&self, name: &str) -> Result<Webhook, Error> {
        decode(self.http.get(self.webhook_url(name)).send().await?).await
    }

    /// Removes a webhook: its URL answers 404 from now on.
    pub async fn delete_webhook(&self, name: &str) -> Result<(), Error> {
        let resp = self.http.delete(self.webhook_url(name)).send().await?;
        if resp.status().is_success() {
            return Ok(());
        }
        decode::<Value>(resp).await.map(|_| ())
    }

    fn webhook_url(&self, name: &str) -> String {
        format!("{}/v1/webhooks/{}", self.base, segment(name))
    }
}
