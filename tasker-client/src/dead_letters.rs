//! Dead letters through the API: list, show, replay, discard.

use serde::Deserialize;
use serde_json::Value;

use crate::client::{Client, decode};
use crate::error::Error;
use tasker_shared::api::{DeadLetter, DeadLetterPage};

impl Client {
    /// Dead letters newest first: `limit` (1–500, default 50) of them older than `before`.
    pub async fn dead_letters(
        &self,
        before: Option<i64>,
        limit: Option<i64>,
    ) -> Result<DeadLetterPage, Error> {
        let mut query = Vec::new();
        query.extend(before.map(|b| ("before", b)));
        query.extend(limit.map(|l| ("limit", l)));
        let req = self.http.get(format!("{}/v1/dead-letters", self.base));
        decode(req.query(&query).send().await?).await
    }

    /// One dead letter with its headers and body; `404 dead_letter_not_found`.
    pub async fn dead_letter(&self, id: i64) -> Result<DeadLetter, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/dead-letters/{id}", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Publishes a dead letter again, as it was, to the queue it came from, and removes it;
    /// returns that queue. `409 not_replayable` if it did not come from one of the cluster's
    /// queues, `503 broker_unavailable` if it could not be published (it is kept).
    pub async fn replay_dead_letter(&self, id: i64) -> Result<String, Error> {
        #[derive(Deserialize)]
        struct Replayed {
            queue: String,
        }
        let resp = self
            .http
            .post(format!("{}/v1/dead-letters/{id}/replay", self.base))
            .send()
            .await?;
        Ok(decode::<Replayed>(resp).await?.queue)
    }

    /// Removes a dead letter for good.
    pub async fn discard_dead_letter(&self, id: i64) -> Result<(), Error> {
        let resp = self
            .http
            .delete(format!("{}/v1/dead-letters/{id}", self.base))
            .send()
            .await?;
        if resp.status().is_success() {
            return Ok(());
        }
        decode::<Value>(resp).await.map(drop)
    }
}
