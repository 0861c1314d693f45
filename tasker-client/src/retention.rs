//! Bulk creation and retention through the API: many tasks in one request, and purging
//! finished tasks.

use tasker_shared::api::{
    BatchCreated, CreateTask, CreateTasks, PurgeRequest, Purged, RetentionPolicy,
};

use crate::client::{Client, decode};
use crate::error::Error;

impl Client {
    /// Creates up to `orchestrator.max_batch_tasks` tasks (10,000 by default) in one request
    /// and one transaction; each gets its own result, in order (created, existing, or refused
    /// with the error `create_task` would get).
    pub async fn create_tasks(&self, tasks: &[CreateTask]) -> Result<BatchCreated, Error> {
        let body = CreateTasks {
            tasks: tasks.to_vec(),
        };
        let resp = self
            .http
            .post(format!("{}/v1/tasks:batch", self.base))
            .json(&body)
            .send()
            .await?;
        decode(resp).await
    }

    /// The retention policy the orchestrator runs, and when a task was last purged.
    pub async fn retention(&self) -> Result<RetentionPolicy, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/retention", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// Purges finished tasks older than `req.older_than` (admin token of every namespace), at
    /// most `req.limit` per call: call again while the answer says `more`.
    pub async fn purge(&self, req: &PurgeRequest) -> Result<Purged, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/purge", self.base))
            .json(req)
            .send()
            .await?;
        decode(resp).await
    }
}
