//! Events sent to a namespace (`POST /v1/events`): each starts the tasks of the templates whose
//! triggers (`on:`) match it. Send one or a batch, list them, show one.

use uuid::Uuid;

use crate::client::{Client, decode};
use crate::error::Error;
use tasker_shared::api::{Event, EventPage, EventsSent, SendEvent, SendEvents};

impl Client {
    /// Sends an event; returns it as stored, with the tasks it started, and whether it is new
    /// (`false`: its `id` was sent before, and it started nothing now).
    pub async fn send_event(&self, event: &SendEvent) -> Result<(Event, bool), Error> {
        let resp = self
            .http
            .post(format!("{}/v1/events", self.base))
            .json(event)
            .send()
            .await?;
        let created = resp.status() == reqwest::StatusCode::CREATED;
        Ok((decode(resp).await?, created))
    }

    /// Sends many events in one request and one transaction; each gets its own result.
    pub async fn send_events(&self, events: Vec<SendEvent>) -> Result<EventsSent, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/events:batch", self.base))
            .json(&SendEvents { events })
            .send()
            .await?;
        decode(resp).await
    }

    /// A page of events, newest first: of `namespace` and `name` if given, older than
    /// `before`, at most `limit` (1–500, 50 by default).
    pub async fn events(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        before: Option<Uuid>,
        limit: Option<i64>,
    ) -> Result<EventPage, Error> {
        let mut query: Vec<(&str, String)> = Vec::new();
        query.extend(namespace.map(|n| ("namespace", n.to_owned())));
        query.extend(name.map(|n| ("name", n.to_owned())));
        query.extend(before.map(|b| ("before", b.to_string())));
        query.extend(limit.map(|l| ("limit", l.to_string())));
        let req = self.http.get(format!("{}/v1/events/log", self.base));
        decode(req.query(&query).send().await?).await
    }

    /// One event with what it started; `404 event_not_found`.
    pub async fn event(&self, id: Uuid) -> Result<Event, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/events/{id}", self.base))
            .send()
            .await?;
        decode(resp).await
    }
}
