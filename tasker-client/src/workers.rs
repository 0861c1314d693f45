//! The workers registry through the API: who is up and what each serves; a worker's own reports.

use uuid::Uuid;

use tasker_shared::api::{RunningRecorded, RunningReport, WorkerInfo, WorkerList, WorkerReport};

use crate::client::{Client, decode};
use crate::error::Error;

impl Client {
    /// The live workers, or with `all` also those gone in the last day.
    pub async fn workers(&self, all: bool) -> Result<Vec<WorkerInfo>, Error> {
        let mut req = self.http.get(format!("{}/v1/workers", self.base));
        if all {
            req = req.query(&[("all", "true")]);
        }
        Ok(decode::<WorkerList>(req.send().await?).await?.workers)
    }

    /// Reports this worker (at start and every heartbeat).
    pub async fn report_worker(
        &self,
        id: Uuid,
        report: &WorkerReport,
    ) -> Result<WorkerInfo, Error> {
        let resp = self
            .http
            .put(format!("{}/v1/workers/{id}", self.base))
            .json(report)
            .send()
            .await?;
        decode(resp).await
    }

    /// Reports the step attempts this worker's handlers are running (the worker core does it),
    /// so they show `running` with this worker.
    pub async fn report_running(
        &self,
        id: Uuid,
        report: &RunningReport,
    ) -> Result<RunningRecorded, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/workers/{id}/running", self.base))
            .json(report)
            .send()
            .await?;
        decode(resp).await
    }

    /// Says this worker is leaving.
    pub async fn leave_worker(&self, id: Uuid) -> Result<(), Error> {
        let resp = self
            .http
            .delete(format!("{}/v1/workers/{id}", self.base))
            .send()
            .await?;
        if resp.status().is_success() {
            return Ok(());
        }
        decode::<serde_json::Value>(resp).await.map(|_| ())
    }
}
