//! Webhooks (`/v1/webhooks`): endpoints that turn requests other services sign into events of a
//! namespace. Save one (Tasker makes its secret when none is given, shown that once), list,
//! show, remove; a sender posts to it with no token.

use crate::client::Client;
use crate::error::Error;
use tasker_shared::api::{PutWebhook, Webhook, WebhookList};

const WEBHOOKS: &str = "/v1/webhooks";

impl Client {
    /// Saves webhook `name`; returns it (with the secret Tasker made, if it made one) and
    /// whether it is new.
    pub async fn put_webhook(
        &self,
        name: &str,
        spec: &PutWebhook,
    ) -> Result<(Webhook, bool), Error> {
        self.put_named(WEBHOOKS, name, spec).await
    }

    /// The webhooks of the namespaces the token covers.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, Error> {
        Ok(self.get_collection::<WebhookList>(WEBHOOKS).await?.webhooks)
    }

    /// One webhook, without its secret.
    pub async fn webhook(&self, name: &str) -> Result<Webhook, Error> {
        self.get_named(WEBHOOKS, name).await
    }

    /// Removes a webhook: its URL answers 404 from now on.
    pub async fn delete_webhook(&self, name: &str) -> Result<(), Error> {
        self.delete_named(WEBHOOKS, name).await
    }
}
