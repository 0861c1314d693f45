//! Alert rules (`/v1/alerts`): a condition of one namespace watched every second, and a sink
//! told when it fires and when it clears. Save one (admin; Tasker makes a webhook sink's secret
//! when none is given, shown that once), list, show (with what it last did), remove.

use crate::client::Client;
use crate::error::Error;
use tasker_shared::api::{Alert, AlertList, PutAlert};

const ALERTS: &str = "/v1/alerts";

impl Client {
    /// Saves alert rule `name`; returns it (with the secret Tasker made, if it made one) and
    /// whether it is new.
    pub async fn put_alert(&self, name: &str, spec: &PutAlert) -> Result<(Alert, bool), Error> {
        self.put_named(ALERTS, name, spec).await
    }

    /// The alert rules of the namespaces the token covers.
    pub async fn alerts(&self) -> Result<Vec<Alert>, Error> {
        Ok(self.get_collection::<AlertList>(ALERTS).await?.alerts)
    }

    /// One alert rule and what it last did, without its secret.
    pub async fn alert(&self, name: &str) -> Result<Alert, Error> {
        self.get_named(ALERTS, name).await
    }

    /// Removes an alert rule: it is checked no more.
    pub async fn delete_alert(&self, name: &str) -> Result<(), Error> {
        self.delete_named(ALERTS, name).await
    }
}
