//! Fair sharing through the API: the concurrency keys and rate keys, and an operator's pause of
//! a rate key.

use chrono::{DateTime, Utc};

use tasker_shared::api::{
    ConcurrencyLimit, ConcurrencyLimitList, PauseRateLimit, RateLimit, RateLimitList,
};

use crate::{Client, Error, decode, segment};

impl Client {
    /// The concurrency keys (those starting with `prefix`, if given): in use or waited for
    /// first, then the most recently used; every page, followed to the end.
    pub async fn concurrency_limits(
        &self,
        prefix: Option<&str>,
    ) -> Result<Vec<ConcurrencyLimit>, Error> {
        let query: Vec<(&str, &str)> = prefix.map(|p| ("key", p)).into_iter().collect();
        self.every_page(
            "/v1/concurrency-limits",
            &query,
            |p: ConcurrencyLimitList| (p.limits, p.next),
        )
        .await
    }

    /// The rate keys, most recently used first; every page, followed to the end.
    pub async fn rate_limits(&self) -> Result<Vec<RateLimit>, Error> {
        self.every_page("/v1/rate-limits", &[], |p: RateLimitList| {
            (p.limits, p.next)
        })
        .await
    }

    /// Pauses rate key `key` until `until`: no step claiming it starts before then.
    pub async fn pause_rate_limit(
        &self,
        key: &str,
        until: DateTime<Utc>,
        note: Option<&str>,
    ) -> Result<RateLimit, Error> {
        let body = PauseRateLimit {
            until,
            note: note.map(str::to_owned),
        };
        let resp = self
            .http
            .post(format!(
                "{}/v1/rate-limits/{}/pause",
                self.base,
                segment(key)
            ))
            .json(&body)
            .send()
            .await?;
        decode(resp).await
    }

    /// Ends rate key `key`'s pause now.
    pub async fn resume_rate_limit(&self, key: &str) -> Result<RateLimit, Error> {
        let resp = self
            .http
            .delete(format!(
                "{}/v1/rate-limits/{}/pause",
                self.base,
                segment(key)
            ))
            .send()
            .await?;
        decode(resp).await
    }
}
