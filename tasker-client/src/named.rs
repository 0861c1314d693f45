//! Resources saved by name under one collection (`/v1/webhooks/{name}`, `/v1/alerts/{name}`):
//! put (created or replaced), show, remove — the requests every such collection shares.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::client::{Client, decode, segment};
use crate::error::Error;

impl Client {
    /// `PUT <collection>/<name>`: the saved resource and whether it is new.
    pub(crate) async fn put_named<B: Serialize, T: DeserializeOwned>(
        &self,
        collection: &str,
        name: &str,
        body: &B,
    ) -> Result<(T, bool), Error> {
        let resp = self
            .http
            .put(self.named_url(collection, name))
            .json(body)
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok((decode(resp).await?, created))
    }

    /// `GET <collection>/<name>`.
    pub(crate) async fn get_named<T: DeserializeOwned>(
        &self,
        collection: &str,
        name: &str,
    ) -> Result<T, Error> {
        decode(
            self.http
                .get(self.named_url(collection, name))
                .send()
                .await?,
        )
        .await
    }

    /// `GET <collection>`.
    pub(crate) async fn get_collection<T: DeserializeOwned>(
        &self,
        collection: &str,
    ) -> Result<T, Error> {
        decode(
            self.http
                .get(format!("{}{collection}", self.base))
                .send()
                .await?,
        )
        .await
    }

    /// `DELETE <collection>/<name>`.
    pub(crate) async fn delete_named(&self, collection: &str, name: &str) -> Result<(), Error> {
        let resp = self
            .http
            .delete(self.named_url(collection, name))
            .send()
            .await?;
        if resp.status().is_success() {
            return Ok(());
        }
        decode::<Value>(resp).await.map(|_| ())
    }

    fn named_url(&self, collection: &str, name: &str) -> String {
        format!("{}{collection}/{}", self.base, segment(name))
    }
}
