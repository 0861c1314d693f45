//! A worker registers the templates it was given with an orchestrator when it starts, so a
//! workflow's YAML lives next to its handlers and a new or changed workflow never needs an
//! orchestrator restart; then the schedules of its `schedules/` folders (created, or updated by
//! namespace and name: a paused schedule stays paused). Every language's worker does it here,
//! once, in the core. Workers still never touch the database: registration is one
//! `POST /v1/templates` per template and one `POST /v1/schedules` per schedule.
//!
//! A refused template — invalid (422), too large (413), a changed definition under a version
//! already registered (409), or a token that is missing (401) or does not cover the template's
//! namespace (403) — stops the worker at start-up with the orchestrator's message: the user must
//! fix it. An orchestrator that cannot be reached, or that answers anything else (an
//! older release without the route, a proxy), does not stop it (workers need only the broker to
//! run steps, and their templates are usually registered already): the worker starts, and keeps
//! trying in the background with the same backoff as every other connection. A refusal that
//! arrives only then is logged as an error and leaves that template unregistered; the running
//! worker is not stopped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use tasker_broker::{Supervisor, supervisor};
use tasker_client::Client;

use crate::setup::Setup;

/// The answers that refuse a template or schedule for what it says or who sends it (retrying
/// cannot help): invalid (400, 422), no valid token, a token that does not cover its
/// namespace, an unknown template (404), too large, a changed definition under a registered
/// version.
const REFUSALS: [u16; 7] = [400, 401, 403, 404, 413, 409, 422];

/// What there is to register: a template file, then a schedule.
#[derive(Debug)]
enum Item {
    Template(PathBuf),
    Schedule(PathBuf, Box<tasker_shared::time::ScheduleSpec>),
}

/// A template the orchestrator refused.
#[derive(Debug, thiserror::Error)]
#[error("the orchestrator at {url} refused the template {file}: {message} ({code}){hint}")]
pub struct Refused {
    pub url: String,
    pub file: String,
    pub code: String,
    pub message: String,
    /// What the user may not know: a token refused (401) by an orchestrator the worker was
    /// not pointed at, only found at the default URL (another one, e.g. the demo's).
    pub hint: String,
}

/// The hint of a refusal with `status` by the orchestrator at `url`, `defaulted` when nobody
/// configured that URL.
pub(crate) fn hint(status: u16, url: &str, defaulted: bool) -> String {
    if status == 401 && defaulted {
        format!(
            "; this worker was given no orchestrator URL and used the default, {url}, where another orchestrator may answer: point it at yours with --orchestrator-url or TASKER_WORKER__ORCHESTRATOR_URL"
        )
    } else {
        String::new()
    }
}

/// The templates still to register, and where.
#[derive(Debug)]
struct Registrar {
    client: Client,
    url: String,
    /// Nobody set `worker.orchestrator_url`: the default was used.
    defaulted_url: bool,
    registered_by: String,
    pending: Vec<Item>,
}

/// What one round of attempts found.
enum Round {
    Done,
    /// The orchestrator could not be reached (or is unavailable); the rest are still pending.
    Unreachable(String),
    Refused(Refused),
}

impl Registrar {
    /// Tries every pending template in order, stopping at the first that cannot be registered.
    async fn attempt(&mut self) -> Round {
        while let Some(item) = self.pending.first() {
            let file = match item {
                Item::Template(file) => file,
                Item::Schedule(file, spec) => {
                    let label = file.display().to_string();
                    match self.client.put_schedule(spec).await {
                        Ok((s, created)) => {
                            tracing::info!(schedule = %format!("{}/{}", s.namespace, s.name),
                                file = %label, created, "schedule registered");
                            self.pending.remove(0);
                            continue;
                        }
                        Err(e) => return self.failed(label, e),
                    }
                }
            };
            let label = file.display().to_string();
            // The file was read and validated a moment ago; read it again so the server sees
            // (and its errors point into) exactly the text the user wrote.
            let text = match std::fs::read_to_string(file) {
                Ok(t) => t,
                Err(e) => {
                    return Round::Refused(Refused {
                        url: self.url.clone(),
                        file: label,
                        code: "unreadable".into(),
                        message: e.to_string(),
                        hint: String::new(),
                    });
                }
            };
            match self
                .client
                .register_template(&text, Some(&label), Some(&self.registered_by))
                .await
            {
                Ok(r) => {
                    let key = r.template.key();
                    if r.created {
                        tracing::info!(template = %key, file = %label, "template registered");
                    } else {
                        tracing::debug!(template = %key, file = %label, "template already registered");
                    }
                    self.pending.remove(0);
                }
                Err(e) => return self.failed(label, e),
            }
        }
        Round::Done
    }

    /// A refusal of `file`, or an orchestrator that could not be reached.
    fn failed(&self, file: String, e: tasker_client::Error) -> Round {
        match e {
            tasker_client::Error::Api {
                status,
                code,
                message,
            } if REFUSALS.contains(&status) => Round::Refused(Refused {
                url: self.url.clone(),
                file,
                code,
                message,
                hint: hint(status, &self.url, self.defaulted_url),
            }),
            e => Round::Unreachable(e.to_string()),
        }
    }
}

/// Registers `setup`'s templates with the configured orchestrator, as `worker:<language>:<name>`.
/// Returns once every template is registered, or — when the orchestrator cannot be reached —
/// at once, leaving a background task (on the current tokio runtime) to retry until it
/// succeeds or `cancel` fires. Does nothing when `worker.register_templates` is off.
pub async fn register_templates(
    setup: &Setup,
    language: &str,
    cancel: &CancellationToken,
) -> Result<(), Refused> {
    let worker = &setup.config.worker;
    if !worker.register_templates || setup.templates.is_empty() {
        return Ok(());
    }
    let mut registrar = Registrar {
        client: setup.options.orchestrator_client(),
        url: worker.orchestrator_url.clone(),
        defaulted_url: setup.defaulted.orchestrator_url,
        registered_by: label(&format!("worker:{language}:{}", setup.options.name)),
        pending: setup
            .templates
            .iter()
            .map(|t| Item::Template(t.source.clone()))
            .chain(
                setup
                    .schedules
                    .iter()
                    .map(|(f, s)| Item::Schedule(f.clone(), Box::new(s.clone()))),
            )
            .collect(),
    };
    let why = match registrar.attempt().await {
        Round::Done => return Ok(()),
        Round::Refused(r) => return Err(r),
        Round::Unreachable(why) => why,
    };
    tracing::warn!(
        orchestrator = %registrar.url,
        error = %why,
        pending = registrar.pending.len(),
        "cannot register templates yet; starting anyway and retrying in the background"
    );
    let registrar = Arc::new(Mutex::new(registrar));
    let cancel = cancel.clone();
    tokio::spawn(async move {
        let options = supervisor::Options {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            ..supervisor::Options::default()
        };
        Supervisor::new("template registration", options)
            .run(&cancel, || {
                let registrar = registrar.clone();
                let cancel = cancel.clone();
                async move {
                    let round = tokio::select! {
                        () = cancel.cancelled() => return Ok(()),
                        round = async { registrar.lock().await.attempt().await } => round,
                    };
                    match round {
                        Round::Done => {
                            tracing::info!("every template registered");
                            Ok(())
                        }
                        Round::Refused(r) => {
                            // Nothing to retry: the template must change first.
                            tracing::error!(error = %r, "template refused; it cannot be used");
                            Ok(())
                        }
                        Round::Unreachable(why) => Err(why),
                    }
                }
            })
            .await;
    });
    Ok(())
}

/// `registered_by` as the API accepts it: no control characters, at most 256 characters.
fn label(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(256)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_or_odd_worker_name_still_makes_a_valid_label() {
        let l = super::label(&format!("worker:rust:a\u{0}b{}", "x".repeat(400)));
        assert_eq!(l.chars().count(), 256);
        assert!(l.starts_with("worker:rust:a?b"));
    }

    #[test]
    fn a_401_from_the_default_url_names_it_and_how_to_set_another() {
        use super::hint;
        let said = hint(401, "http://127.0.0.1:8080", true);
        assert!(said.contains("http://127.0.0.1:8080"), "{said}");
        assert!(said.contains("--orchestrator-url"), "{said}");
        assert!(said.contains("TASKER_WORKER__ORCHESTRATOR_URL"), "{said}");
        assert_eq!(hint(401, "http://o:8080", false), "", "a URL someone set");
        assert_eq!(
            hint(403, "http://127.0.0.1:8080", true),
            "",
            "a token refused on its merits"
        );
    }
}
