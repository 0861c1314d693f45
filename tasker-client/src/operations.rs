//! Operations by filter through the API: retry, resolve or cancel every task a filter matches,
//! and follow the operation's progress.

use std::time::{Duration, Instant};

use tasker_shared::api::{Operation, OperationCount, OperationList, StartOperation};
use uuid::Uuid;

use crate::client::{Client, decode};
use crate::error::Error;

/// How often [`Client::wait_operation`] asks for an operation's progress.
const POLL: Duration = Duration::from_millis(250);

impl Client {
    /// Starts an operation on every task `req.filter` matches (`req.dry_run` is ignored: see
    /// [`Client::count_operation`]). The answer has the exact count matched; the tasks are
    /// acted on in the background.
    pub async fn start_operation(&self, req: &StartOperation) -> Result<Operation, Error> {
        let req = StartOperation {
            dry_run: false,
            ..req.clone()
        };
        self.post_operation(&req).await
    }

    /// How many tasks `req` would act on, and the newest ten of them; acts on none.
    pub async fn count_operation(&self, req: &StartOperation) -> Result<OperationCount, Error> {
        let req = StartOperation {
            dry_run: true,
            ..req.clone()
        };
        self.post_operation(&req).await
    }

    async fn post_operation<T: serde::de::DeserializeOwned>(
        &self,
        req: &StartOperation,
    ) -> Result<T, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/operations", self.base))
            .json(req)
            .send()
            .await?;
        decode(resp).await
    }

    /// An operation and its progress.
    pub async fn operation(&self, id: Uuid) -> Result<Operation, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/operations/{id}", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Operations, newest first, a page at a time (`before`: the previous page's
    /// `next_before`).
    pub async fn operations(
        &self,
        limit: Option<u32>,
        before: Option<Uuid>,
    ) -> Result<OperationList, Error> {
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(l) = limit {
            query.push(("limit", l.to_string()));
        }
        if let Some(b) = before {
            query.push(("before", b.to_string()));
        }
        let resp = self
            .http
            .get(format!("{}/v1/operations", self.base))
            .query(&query)
            .send()
            .await?;
        decode(resp).await
    }

    /// Stops a running operation; the tasks it has not reached are left as they are.
    pub async fn cancel_operation(&self, id: Uuid) -> Result<Operation, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/operations/{id}/cancel", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Follows operation `id` until it ends or `timeout` passes, calling `progress` with each
    /// reading; returns the last one (ended, or still running at the timeout).
    pub async fn wait_operation(
        &self,
        id: Uuid,
        timeout: Duration,
        mut progress: impl FnMut(&Operation),
    ) -> Result<Operation, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let op = self.operation(id).await?;
            progress(&op);
            if op.is_finished() || Instant::now() >= deadline {
                return Ok(op);
            }
            tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
        }
    }
}
