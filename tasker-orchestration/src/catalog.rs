//! The templates this orchestrator can create tasks from: registered in PostgreSQL (so every
//! orchestrator sees the same set) and held compiled in memory.
//!
//! A version registered anywhere reaches every orchestrator at once: registration sends a
//! `pg_notify` that [`Catalog::follow`] turns into a load of that one version. After the
//! listener (re)connects, the whole registry is read again, so a notification missed while it
//! was away loses nothing. A request for a template not in memory still asks the database
//! once, for that template only (it may have been registered a moment ago on another
//! orchestrator).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use tasker_shared::template::Loaded;

use crate::events::{Event, Events};
use crate::store::{self, Registration, Store, TemplateView};

/// A registered, compiled template version.
#[derive(Debug)]
pub struct Entry {
    pub id: Uuid,
    pub loaded: Loaded,
    /// The newest registration wins when a request names no version.
    pub registered_at: DateTime<Utc>,
}

type Key = (String, String, String);

/// Why templates could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The version is registered with another definition; a version never changes.
    #[error(
        "{key} from {source_file} differs from the definition registered under that version \
         (registered at {registered_at} by {registered_by}); a version is immutable: give the \
         changed template a new version"
    )]
    Conflict {
        key: String,
        source_file: String,
        registered_at: DateTime<Utc>,
        registered_by: String,
    },
}

/// Why a template's child steps could not be pinned.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("step {step:?} starts {template}, which is not registered")]
    Unknown { step: String, template: String },
}

/// Registered templates, kept in step with the registry.
#[derive(Debug)]
pub struct Catalog {
    store: Store,
    entries: RwLock<HashMap<Key, Arc<Entry>>>,
    /// A registration was announced but could not be loaded: the next lookup reloads first.
    stale: AtomicBool,
}

impl Catalog {
    /// Registers `templates` (an orchestrator's `--templates` folders) as `registered_by`, then
    /// loads everything registered so far.
    pub async fn load(
        store: Store,
        templates: &[Loaded],
        registered_by: &str,
    ) -> Result<Catalog, Error> {
        let catalog = Catalog {
            store,
            entries: RwLock::new(HashMap::new()),
            stale: AtomicBool::new(false),
        };
        for t in templates {
            if let Registration::Conflict(existing) =
                catalog.register(t.clone(), registered_by).await?
            {
                return Err(Error::Conflict {
                    key: t.template.key(),
                    source_file: t.source.display().to_string(),
                    registered_at: existing.registered_at,
                    registered_by: existing.registered_by.unwrap_or_else(|| "unknown".into()),
                });
            }
        }
        catalog.refresh().await?;
        Ok(catalog)
    }

    /// Registers a validated template version; a new or identical version is usable at once.
    pub async fn register(
        &self,
        loaded: Loaded,
        registered_by: &str,
    ) -> Result<Registration, store::Error> {
        let registration = self
            .store
            .register_template(&loaded.template, registered_by)
            .await?;
        if let Registration::Created(v) | Registration::Unchanged(v) = &registration {
            self.insert(Entry {
                id: v.id,
                loaded,
                registered_at: v.registered_at,
            });
        }
        Ok(registration)
    }

    /// Re-reads the whole registry and adds what memory lacks. Versions are immutable and never
    /// deleted, so nothing held is replaced (and nothing registered meanwhile is lost). Returns
    /// the keys that were not in memory before.
    pub async fn refresh(&self) -> Result<Vec<String>, store::Error> {
        let views = self.store.templates().await?;
        let mut current = self.entries.write().unwrap_or_else(|p| p.into_inner());
        let mut new = Vec::new();
        for view in views {
            let k = (
                view.namespace.clone(),
                view.name.clone(),
                view.version.clone(),
            );
            if current.contains_key(&k) {
                continue;
            }
            if let Some(entry) = compile(view) {
                new.push(entry.loaded.template.key());
                current.insert(k, Arc::new(entry));
            }
        }
        self.stale.store(false, Ordering::Relaxed);
        Ok(new)
    }

    /// The template `namespace/name@version`, or the newest version when `version` is `None`.
    /// Not in memory: asks the database for that one template.
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<Option<Arc<Entry>>, store::Error> {
        if self.stale.load(Ordering::Relaxed) {
            self.refresh().await?;
        }
        if let Some(e) = self.cached(namespace, name, version) {
            return Ok(Some(e));
        }
        let Some(view) = self.store.template(namespace, name, version).await? else {
            return Ok(None);
        };
        Ok(compile(view).map(|e| self.insert(e)))
    }

    /// Pins the child template of each child step of `loaded` (the version it names, or the
    /// newest registered now), in the engine's form stored with the step, by step index. A
    /// child template that is not registered is refused by name.
    pub async fn pin_children(
        &self,
        loaded: &Loaded,
    ) -> Result<Vec<Option<serde_json::Value>>, PinError> {
        let t = &loaded.template;
        let mut pins = Vec::with_capacity(t.steps.len());
        for step in &t.steps {
            let Some(child) = &step.child else {
                pins.push(None);
                continue;
            };
            let namespace = child.namespace.as_deref().unwrap_or(&t.namespace);
            let entry = self
                .get(namespace, &child.template, child.version.as_deref())
                .await?
                .ok_or_else(|| PinError::Unknown {
                    step: step.name.clone(),
                    template: format!(
                        "{namespace}/{}{}",
                        child.template,
                        child
                            .version
                            .as_deref()
                            .map(|v| format!("@{v}"))
                            .unwrap_or_default()
                    ),
                })?;
            let e = &entry.loaded.template;
            pins.push(Some(child.compile(entry.id, &e.namespace, &e.version)));
        }
        Ok(pins)
    }

    /// The template as held in memory, without asking the database.
    pub fn cached(&self, namespace: &str, name: &str, version: Option<&str>) -> Option<Arc<Entry>> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        match version {
            Some(v) => entries
                .get(&(namespace.to_owned(), name.to_owned(), v.to_owned()))
                .cloned(),
            None => entries
                .iter()
                .filter(|((ns, n, _), _)| ns == namespace && n == name)
                .max_by_key(|(_, e)| (e.registered_at, e.id))
                .map(|(_, e)| e.clone()),
        }
    }

    /// The newest version of each template of `namespace` whose `on:` names event `event`
    /// (an older version's triggers no longer start anything once a newer one is registered).
    pub async fn triggered_by(
        &self,
        namespace: &str,
        event: &str,
    ) -> Result<Vec<Arc<Entry>>, store::Error> {
        if self.stale.load(Ordering::Relaxed) {
            self.refresh().await?;
        }
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let mut newest: HashMap<&str, &Arc<Entry>> = HashMap::new();
        for ((ns, name, _), e) in entries.iter() {
            if ns != namespace {
                continue;
            }
            match newest.get(name.as_str()) {
                Some(held) if (held.registered_at, held.id) >= (e.registered_at, e.id) => {}
                _ => {
                    newest.insert(name, e);
                }
            }
        }
        let mut found: Vec<Arc<Entry>> = newest
            .into_values()
            .filter(|e| e.loaded.triggers.iter().any(|t| t.spec.event == event))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.loaded.template.name.cmp(&b.loaded.template.name));
        Ok(found)
    }

    /// Every namespace with at least one template.
    pub fn namespaces(&self) -> Vec<String> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let mut ns: Vec<String> = entries.keys().map(|(n, _, _)| n.clone()).collect();
        ns.sort();
        ns.dedup();
        ns
    }

    /// Loads versions as their registrations are announced, until cancelled; emits
    /// [`Event::TemplateLoaded`] for each version that is new here. Subscribes before it
    /// returns, so nothing announced after this call is missed.
    pub fn follow(
        self: Arc<Self>,
        events: Events,
        cancel: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = events.subscribe_templates();
        async move {
            loop {
                let event = tokio::select! {
                    () = cancel.cancelled() => return,
                    e = rx.recv() => e,
                };
                let loaded = match event {
                    Ok(Event::TemplateRegistered { id }) => self.load_one(id).await,
                    // Notifications may have been missed: while disconnected, or by lagging.
                    Ok(Event::ListenerConnected) | Err(RecvError::Lagged(_)) => {
                        self.refresh().await
                    }
                    Ok(_) => continue,
                    Err(RecvError::Closed) => return,
                };
                match loaded {
                    Ok(keys) => {
                        for key in keys {
                            tracing::info!(template = %key, "template registered");
                            events.emit(Event::TemplateLoaded { key });
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "loading registered templates; will reload on the next request");
                        self.stale.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Loads one version by id; returns its key if it was not in memory.
    async fn load_one(&self, id: Uuid) -> Result<Vec<String>, store::Error> {
        let Some(entry) = self.store.template_by_id(id).await?.and_then(compile) else {
            return Ok(Vec::new());
        };
        let new = !self
            .entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&key(&entry.loaded));
        let entry = self.insert(entry);
        Ok(if new {
            vec![entry.loaded.template.key()]
        } else {
            Vec::new()
        })
    }

    fn insert(&self, entry: Entry) -> Arc<Entry> {
        let entry = Arc::new(entry);
        self.entries
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key(&entry.loaded), entry.clone());
        entry
    }
}

/// Compiles a stored version; one that no longer validates (stored by an older release with
/// looser rules) is skipped with a warning rather than failing everything else.
fn compile(view: TemplateView) -> Option<Entry> {
    let loaded = view
        .template()
        .map_err(|e| e.to_string())
        .and_then(|t| t.validate("<registry>").map_err(|e| e.to_string()));
    match loaded {
        Ok(loaded) => Some(Entry {
            id: view.id,
            loaded,
            registered_at: view.registered_at,
        }),
        Err(e) => {
            tracing::warn!(
                template = %format!("{}/{}@{}", view.namespace, view.name, view.version),
                error = %e,
                "skipping invalid registered template"
            );
            None
        }
    }
}

fn key(loaded: &Loaded) -> Key {
    let t = &loaded.template;
    (t.namespace.clone(), t.name.clone(), t.version.clone())
}
