//! Who may touch which namespace. A token scoped to namespaces (`details.namespace` in its 403)
//! reaches the tasks, steps, templates and dead letters of those namespaces only; an unscoped
//! token, or no token at all when tokens are off, reaches every namespace. Every route that
//! names a namespace, a task or a dead letter asks [`Caller`] first, so no route can forget.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde_json::json;
use tasker_shared::namespaces::Patterns;
use uuid::Uuid;

use super::Error;
use crate::audit::Note;
use crate::shared::Shared;
use crate::store::{Principal, Scope};

/// The holder of the request's token (`None` when the orchestrator serves without tokens), and
/// the request's audit note: every namespace a caller is checked against is recorded there.
#[derive(Debug, Clone)]
pub struct Caller(Option<Principal>, Note);

impl From<Option<Principal>> for Caller {
    fn from(p: Option<Principal>) -> Self {
        Caller(p, Note::default())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Error> {
        Ok(Caller(
            parts.extensions.get::<Principal>().cloned(),
            parts.extensions.get::<Note>().cloned().unwrap_or_default(),
        ))
    }
}

impl Caller {
    pub fn principal(&self) -> Option<&Principal> {
        self.0.as_ref()
    }

    /// The request's audit note (`crate::audit`): what a handler learns of its targets goes
    /// there.
    pub fn audit(&self) -> &Note {
        &self.1
    }

    /// The namespaces the caller is limited to; `None`: every one.
    fn patterns(&self) -> Option<&Patterns> {
        self.0.as_ref().and_then(|p| p.namespaces.as_ref())
    }

    /// A 403 `forbidden` that says what this caller's token covers.
    pub fn forbidden(&self, message: String) -> Error {
        let name = self.0.as_ref().map(|p| p.name.clone());
        let covers = self.patterns().map(ToString::to_string);
        Error::new(StatusCode::FORBIDDEN, "forbidden", message)
            .with_details(json!({ "token": name, "namespaces": covers }))
    }

    /// Whether the caller may touch `namespace`.
    pub fn covers(&self, namespace: &str) -> bool {
        self.patterns().is_none_or(|p| p.covers(namespace))
    }

    /// Ok if the caller may touch `namespace`, else 403 naming it. Either way the namespace
    /// goes into the request's audit note.
    pub fn check(&self, namespace: &str) -> Result<(), Error> {
        self.1.namespace(namespace);
        match self.patterns() {
            Some(p) if !p.covers(namespace) => Err(self
                .forbidden(format!(
                    "this token covers the namespaces {p}, not {namespace:?}"
                ))
                .with_details(json!({
                    "token": self.0.as_ref().map(|p| p.name.clone()),
                    "namespaces": p.to_string(),
                    "namespace": namespace,
                }))),
            _ => Ok(()),
        }
    }

    /// Ok if the caller covers every namespace `reach` holds, else 403 naming the first it
    /// does not and how the work reaches it.
    pub fn check_reach(&self, reach: &crate::reach::Reach) -> Result<(), Error> {
        let Some(p) = self.patterns() else {
            return Ok(());
        };
        match reach.uncovered(|ns| p.covers(ns)) {
            None => Ok(()),
            Some((namespace, how)) => Err(self
                .forbidden(format!(
                    "this token covers the namespaces {p}, not {namespace:?}, which the work                      reaches through {how}"
                ))
                .with_details(json!({
                    "token": self.0.as_ref().map(|p| p.name.clone()),
                    "namespaces": p.to_string(),
                    "namespace": namespace,
                    "via": how,
                }))),
        }
    }

    /// [`Caller::check_reach`] of what a task of `loaded` reaches (computed only for a caller
    /// limited to namespaces: every other one covers it all).
    pub async fn check_template(
        &self,
        shared: &Shared,
        loaded: &tasker_shared::template::Loaded,
    ) -> Result<(), Error> {
        if self.patterns().is_none() {
            return Ok(());
        }
        self.check_reach(&crate::reach::Reach::of(&shared.catalog, loaded).await?)
    }

    /// This request acting for `principal` (the token that saved a webhook): what it may
    /// touch is judged with that token, and the audit note names it.
    pub fn acting_for(self, principal: Option<Principal>) -> Caller {
        if let Some(p) = &principal {
            self.1.token(p.id, &p.name);
        }
        Caller(principal, self.1)
    }

    /// The id of the caller's token, which work it saves records (`None` without tokens).
    pub fn token_id(&self) -> Option<i64> {
        self.0.as_ref().map(|p| p.id)
    }

    /// Ok if the caller may touch task `id`: 404 `task_not_found` if there is none, 403 if it
    /// is of a namespace the caller's token does not cover. Costs one indexed read for a scoped
    /// token, nothing otherwise.
    pub async fn check_task(&self, shared: &Shared, id: Uuid) -> Result<(), Error> {
        if self.patterns().is_none() {
            return Ok(());
        }
        let namespace = shared
            .store
            .task_namespace(id)
            .await?
            .ok_or_else(|| Error::not_found("task_not_found", format!("no task {id}")))?;
        self.check(&namespace)
    }

    /// [`Caller::check_task`], or the caller covers the namespace of one of the task's steps:
    /// a worker serving a step routed to its namespace reads what that step reads of its task
    /// (a context or parent results carried by reference), whatever the template's namespace.
    pub async fn check_task_or_step(&self, shared: &Shared, id: Uuid) -> Result<(), Error> {
        let Err(refused) = self.check_task(shared, id).await else {
            return Ok(());
        };
        match self.namespace_regex() {
            Some(regex) if shared.store.task_has_step_in(id, &regex).await? => Ok(()),
            _ => Err(refused),
        }
    }

    /// Ok only for a caller that reaches every namespace (for what they all share: the metrics,
    /// dead letters that name no task).
    pub fn require_unscoped(&self, what: &str) -> Result<(), Error> {
        match self.patterns() {
            Some(p) => Err(self.forbidden(format!(
                "{what} needs a token of every namespace; this one covers {p}"
            ))),
            None => Ok(()),
        }
    }

    /// The PostgreSQL regular expression a list filters namespaces by; `None`: no filter.
    pub fn namespace_regex(&self) -> Option<String> {
        self.patterns().map(Patterns::to_regex)
    }

    /// Whether the caller may see and revoke a token covering `namespaces` (`None`: every
    /// namespace).
    pub fn may_manage(&self, namespaces: Option<&[String]>) -> bool {
        match (self.patterns(), namespaces) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(mine), Some(theirs)) => {
                Patterns::new(theirs.iter().cloned()).is_ok_and(|t| t.within(mine))
            }
        }
    }

    /// The namespaces a token the caller creates with `scope` gets: those asked for, which
    /// must lie within the caller's own; the caller's own if none are asked for. 403 for more
    /// than the caller holds.
    pub fn grantable(
        &self,
        scope: Scope,
        asked: Option<Patterns>,
    ) -> Result<Option<Patterns>, Error> {
        if let Some(p) = &self.0
            && scope > p.scope
        {
            return Err(self.forbidden(format!(
                "a token of scope {} cannot create one of scope {scope}",
                p.scope
            )));
        }
        match (self.patterns(), asked) {
            (None, asked) => Ok(asked),
            (Some(mine), None) => Ok(Some(mine.clone())),
            (Some(mine), Some(asked)) if asked.within(mine) => Ok(Some(asked)),
            (Some(mine), Some(asked)) => Err(self.forbidden(format!(
                "this token covers {mine}; it cannot create one covering {asked}"
            ))),
        }
    }
}
