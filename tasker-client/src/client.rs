//! The client itself: where the orchestrator is, how to reach it (token, TLS, timeouts), and
//! the task calls; each other family of calls is a module of its own (`templates`, `limits`, …).

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tasker_shared::api::{
    CreateTask, History, ParentResults, RegisteredTemplate as TemplateInfo, RepairNote, Resolve,
    Step, StepInputs, StepPage, Task, TaskCounts, TaskPage, Transition,
};

use crate::error::Error;
use uuid::Uuid;

/// How long one page of parent results may take to arrive.
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`Client::register_template`] did.
#[derive(Debug, Clone)]
pub struct Registered {
    /// `true`: a new version was stored; `false`: the same definition was already registered.
    pub created: bool,
    pub template: TemplateInfo,
}

/// Filter for [`Client::tasks`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The template's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Uuid>,
    /// Only the tasks this task's child steps started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<Uuid>,
    /// Only tasks created at or after this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_after: Option<DateTime<Utc>>,
    /// Only tasks created before this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_before: Option<DateTime<Utc>>,
    /// Only tasks whose context contains this JSON object (sent as its text).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_text")]
    pub context: Option<Value>,
    /// Only tasks whose id begins with these hexadecimal digits (4 to 32, hyphens allowed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<String>,
    /// Only the task started with this idempotency key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Also count the tasks of each state the filter matches (`TaskPage::counts`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub counts: bool,
}

/// A JSON value as a query parameter: its text.
fn json_text<S: serde::Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

/// Makes rustls' ring provider the process default, once: reqwest is built without one of its
/// own (so nothing compiles a second crypto library) and needs it before its first client, even
/// for plain `http://`. Called by every [`Client`] constructor; a process that builds its own
/// `reqwest::Client` calls it first.
pub fn install_crypto_provider() {
    // Err: one is installed already (this one, or the process's own choice), which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How a [`Client`] reaches the orchestrator.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Sent as `Authorization: Bearer <token>` (an orchestrator that requires API tokens).
    pub token: Option<String>,
    /// PEM file of CA certificates trusted beside the system's, for an `https://` orchestrator
    /// whose certificate they sign (a private CA).
    pub tls_ca_file: Option<PathBuf>,
}

/// Client of one orchestrator.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
}

impl Client {
    pub fn new(base_url: &str) -> Self {
        Self::with_token(base_url, None)
    }

    /// A client that sends `Authorization: Bearer <token>` with every request (for an
    /// orchestrator that requires API tokens; `None`: none sent).
    pub fn with_token(base_url: &str, token: Option<&str>) -> Self {
        Self::build(base_url, token, Vec::new())
    }

    /// A client with a token and a CA file (see [`ClientOptions`]); fails only when the CA file
    /// cannot be read or holds no certificate.
    pub fn with_options(base_url: &str, options: &ClientOptions) -> Result<Self, Error> {
        let mut roots = Vec::new();
        if let Some(path) = &options.tls_ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| Error::Tls(format!("cannot read {}: {e}", path.display())))?;
            roots = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?;
            if roots.is_empty() {
                return Err(Error::Tls(format!(
                    "{} holds no PEM certificate",
                    path.display()
                )));
            }
        }
        Ok(Self::build(base_url, options.token.as_deref(), roots))
    }

    fn build(base_url: &str, token: Option<&str>, roots: Vec<reqwest::Certificate>) -> Self {
        install_crypto_provider();
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token
            && let Ok(mut value) =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        {
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        Self {
            // An unreachable address fails in seconds, not at the OS's connect timeout.
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                // Below the server's idle limit (`orchestrator.header_timeout_ms`, 10 s by
                // default, closes a keep-alive connection that sends nothing): a request never
                // goes out on a connection the server is closing (a reset, not retried for a
                // POST).
                .pool_idle_timeout(Duration::from_secs(4))
                .default_headers(headers)
                .tls_certs_merge(roots)
                .build()
                .unwrap_or_default(),
            base: base_url.trim_end_matches('/').to_owned(),
        }
    }

    /// Creates a task (or returns the existing one for a repeated idempotency key).
    pub async fn create_task(&self, req: &CreateTask) -> Result<Task, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/tasks", self.base))
            .json(req)
            .send()
            .await?;
        decode(resp).await
    }

    /// A task; with `wait`, returns as soon as it is terminal (or when `wait` runs out). The
    /// server refuses a `wait` beyond its cap (`400 invalid_wait`); [`Client::wait`] has none.
    pub async fn task(&self, id: Uuid, wait: Option<Duration>) -> Result<Task, Error> {
        let mut req = self.http.get(format!("{}/v1/tasks/{id}", self.base));
        if let Some(w) = wait {
            req = req
                .query(&[("wait", w.as_secs_f64())])
                .timeout(w + Duration::from_secs(10));
        }
        decode(req.send().await?).await
    }

    /// One page of a step's parent results, in parent order after the cursor `after`.
    pub async fn parent_results(
        &self,
        task: Uuid,
        step: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<ParentResults, Error> {
        self.parent_results_as(task, step, after, limit).await
    }

    /// A page of parent results as JSON text, unparsed: what a worker core hands to another
    /// language, which parses it itself.
    pub async fn parent_results_text(
        &self,
        task: Uuid,
        step: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<ParentResults<Box<serde_json::value::RawValue>>, Error> {
        self.parent_results_as(task, step, after, limit).await
    }

    async fn parent_results_as<R: serde::de::DeserializeOwned>(
        &self,
        task: Uuid,
        step: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<ParentResults<R>, Error> {
        let mut req = self
            .http
            .get(format!(
                "{}/v1/tasks/{task}/steps/{step}/parent_results",
                self.base
            ))
            .query(&[("limit", limit)]);
        if let Some(a) = after {
            req = req.query(&[("after", a)]);
        }
        // A page is at most a few MiB: an orchestrator that takes longer has stalled.
        decode(req.timeout(PAGE_TIMEOUT).send().await?).await
    }

    /// Every step of a task, read page by page.
    pub async fn steps(&self, id: Uuid) -> Result<Vec<Step>, Error> {
        let (mut steps, mut after) = (Vec::new(), None);
        loop {
            let page = self.steps_page(id, after, 1_000).await?;
            steps.extend(page.steps);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(steps),
            }
        }
    }

    /// One page of a task's steps in id order, after the step `after`.
    pub async fn steps_page(
        &self,
        id: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<StepPage, Error> {
        let mut req = self
            .http
            .get(format!("{}/v1/tasks/{id}/steps", self.base))
            .query(&[("limit", limit)]);
        if let Some(a) = after {
            req = req.query(&[("after", a)]);
        }
        // A page is at most a few MiB: an orchestrator that takes longer has stalled.
        decode(req.timeout(PAGE_TIMEOUT).send().await?).await
    }

    pub async fn tasks(&self, q: &TaskQuery) -> Result<TaskPage, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/tasks", self.base))
            .query(q)
            .send()
            .await?;
        decode(resp).await
    }

    /// How many tasks of each state `q` matches (its `state`, `before` and `limit` left out).
    pub async fn task_counts(&self, q: &TaskQuery) -> Result<TaskCounts, Error> {
        let q = TaskQuery {
            counts: true,
            limit: Some(1),
            ..q.clone()
        };
        Ok(self.tasks(&q).await?.counts.unwrap_or_default())
    }

    pub async fn cancel(&self, id: Uuid) -> Result<Task, Error> {
        let resp = self
            .http
            .post(format!("{}/v1/tasks/{id}/cancel", self.base))
            .send()
            .await?;
        decode(resp).await
    }

    /// A task's history, oldest first.
    pub async fn history(&self, id: Uuid) -> Result<Vec<Transition>, Error> {
        let resp = self
            .http
            .get(format!("{}/v1/tasks/{id}/history", self.base))
            .send()
            .await?;
        Ok(decode::<History>(resp).await?.transitions)
    }

    /// One attempt of a step (its name or id; the latest attempt unless `attempt`) as its
    /// handler received it: what `tasker replay` runs the local handler on. `409
    /// not_replayable` for a wait or child step, or one that has not run.
    pub async fn step_inputs(
        &self,
        id: Uuid,
        step: &str,
        attempt: Option<u32>,
    ) -> Result<StepInputs, Error> {
        let req = self.http.get(format!(
            "{}/v1/tasks/{id}/steps/{}/inputs",
            self.base,
            segment(step)
        ));
        let query: Vec<(&str, u32)> = attempt.map(|a| ("attempt", a)).into_iter().collect();
        decode(req.query(&query).send().await?).await
    }

    /// Retries a task that ended in error: the step that failed it runs again with its
    /// template's attempts, and the steps the failure cancelled wait for their parents again.
    /// `409 task_not_failed` unless the task is in error.
    pub async fn retry(&self, id: Uuid, note: &RepairNote) -> Result<Task, Error> {
        self.repair(format!("{}/v1/tasks/{id}/retry", self.base), note)
            .await
    }

    /// Like [`Client::retry`], naming the step (by id or name); `409 step_not_failed` unless
    /// it is the step that failed the task.
    pub async fn retry_step(&self, id: Uuid, step: &str, note: &RepairNote) -> Result<Task, Error> {
        let url = format!("{}/v1/tasks/{id}/steps/{}/retry", self.base, segment(step));
        self.repair(url, note).await
    }

    /// Completes the step that failed a task with `result`, as if its handler had returned it;
    /// the DAG goes on from there. `422 invalid_result` if the step's type cannot take it (a
    /// decision must name its branches, a batchable step list its batches).
    pub async fn resolve(
        &self,
        id: Uuid,
        step: &str,
        result: &Value,
        note: &RepairNote,
    ) -> Result<Task, Error> {
        let body = Resolve {
            result: Some(result.clone()),
            by: note.by.clone(),
            reason: note.reason.clone(),
        };
        let resp = self
            .http
            .post(format!(
                "{}/v1/tasks/{id}/steps/{}/resolve",
                self.base,
                segment(step)
            ))
            .json(&body)
            .send()
            .await?;
        decode(resp).await
    }

    async fn repair(&self, url: String, note: &RepairNote) -> Result<Task, Error> {
        decode(self.http.post(url).json(note).send().await?).await
    }
}

/// A step id or name as one URL path segment (a batch's name has a `#`).
pub(crate) fn segment(s: &str) -> percent_encoding::PercentEncode<'_> {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
}

pub(crate) async fn decode<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
) -> Result<T, Error> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp.json().await?);
    }
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    Err(Error::Api {
        status: status.as_u16(),
        code: body["error"]["code"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned(),
        message: body["error"]["message"]
            .as_str()
            .unwrap_or("no message")
            .to_owned(),
    })
}
