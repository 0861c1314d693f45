//! Signals and schedules through the API.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use tasker_shared::api::{
    Backfill, Backfilled, PauseSchedule, Schedule, ScheduleChanges, ScheduleList, SendSignal,
    Signal, SignalList, Task,
};
use tasker_shared::time::ScheduleSpec;

use crate::{Client, Error, decode, segment};

/// What sending a signal did.
#[derive(Debug, Clone)]
pub struct Sent {
    /// False when the same signal (id and payload) had been sent already.
    pub created: bool,
    pub signal: Signal,
}

impl Client {
    /// Sends signal `name` to task `id`: a wait step waiting for it completes with `payload`.
    /// Sending the same `signal_id` again with the same payload changes nothing; with another,
    /// `409 signal_conflict`. `409 task_finished` once the task has ended.
    pub async fn signal(
        &self,
        id: Uuid,
        name: &str,
        payload: Option<Value>,
        signal_id: Option<String>,
    ) -> Result<Sent, Error> {
        let resp = self
            .http
            .post(format!(
                "{}/v1/tasks/{id}/signals/{}",
                self.base,
                segment(name)
            ))
            .json(&SendSignal { signal_id, payload })
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok(Sent {
            created,
            signal: decode(resp).await?,
        })
    }

    /// A task's signals, oldest first.
    pub async fn signals(&self, id: Uuid) -> Result<Vec<Signal>, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/tasks/{id}/signals", self.base))
            .send()
            .await?;
        Ok(decode::<SignalList>(resp).await?.signals)
    }

    /// Creates or updates a schedule (by namespace and name); true if it was created.
    pub async fn put_schedule(&self, spec: &ScheduleSpec) -> Result<(Schedule, bool), Error> {
        let resp = self
            .http
            .post(format!("{}/v1/schedules", self.base))
            .json(spec)
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok((decode(resp).await?, created))
    }

    /// Schedules, optionally of one namespace; every page, followed to the end.
    pub async fn schedules(&self, namespace: Option<&str>) -> Result<Vec<Schedule>, Error> {
        let query: Vec<(&str, &str)> = namespace.map(|ns| ("namespace", ns)).into_iter().collect();
        self.every_page("/v1/schedules", &query, |p: ScheduleList| {
            (p.schedules, p.next)
        })
        .await
    }

    /// One schedule, with its next fires.
    pub async fn schedule(&self, namespace: &str, name: &str) -> Result<Schedule, Error> {
        decode(
            self.http
                .get(self.schedule_url(namespace, name, ""))
                .send()
                .await?,
        )
        .await
    }

    /// Changes some of a schedule's definition.
    pub async fn update_schedule(
        &self,
        namespace: &str,
        name: &str,
        changes: &ScheduleChanges,
    ) -> Result<Schedule, Error> {
        let url = self.schedule_url(namespace, name, "");
        decode(self.http.patch(url).json(changes).send().await?).await
    }

    /// Deletes a schedule (its tasks stay).
    pub async fn delete_schedule(&self, namespace: &str, name: &str) -> Result<(), Error> {
        let resp = self
            .http
            .delete(self.schedule_url(namespace, name, ""))
            .send()
            .await?;
        if resp.status().is_success() {
            return Ok(());
        }
        decode::<Value>(resp).await.map(|_| ())
    }

    /// Pauses a schedule, with a note saying why.
    pub async fn pause_schedule(
        &self,
        namespace: &str,
        name: &str,
        note: Option<String>,
    ) -> Result<Schedule, Error> {
        let url = self.schedule_url(namespace, name, "/pause");
        let body = PauseSchedule { note };
        decode(self.http.post(url).json(&body).send().await?).await
    }

    /// Resumes a paused schedule from now.
    pub async fn resume_schedule(&self, namespace: &str, name: &str) -> Result<Schedule, Error> {
        let url = self.schedule_url(namespace, name, "/resume");
        decode(self.http.post(url).send().await?).await
    }

    /// Starts a task of the schedule now.
    pub async fn trigger_schedule(&self, namespace: &str, name: &str) -> Result<Task, Error> {
        let url = self.schedule_url(namespace, name, "/trigger");
        decode(self.http.post(url).send().await?).await
    }

    /// Starts the tasks of every fire time in `[from, to]` that has none.
    pub async fn backfill_schedule(
        &self,
        namespace: &str,
        name: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Backfilled, Error> {
        let url = self.schedule_url(namespace, name, "/backfill");
        let body = Backfill { from, to };
        decode(self.http.post(url).json(&body).send().await?).await
    }

    fn schedule_url(&self, namespace: &str, name: &str, action: &str) -> String {
        format!(
            "{}/v1/schedules/{}/{}{action}",
            self.base,
            segment(namespace),
            segment(name)
        )
    }
}
