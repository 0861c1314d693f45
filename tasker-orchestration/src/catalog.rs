//! The templates this orchestrator can create tasks from: registered in PostgreSQL (so every
//! orchestrator sees the same set) and held compiled in memory.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use uuid::Uuid;

use tasker_shared::TaskTemplate;
use tasker_shared::template::Loaded;

use crate::store::{self, Store};

/// A registered, compiled template.
#[derive(Debug)]
pub struct Entry {
    pub id: Uuid,
    pub loaded: Loaded,
    /// Registration order; the newest version wins when a request names none.
    order: usize,
}

type Key = (String, String, String);

/// Registered templates, refreshed from the database on a miss.
#[derive(Debug)]
pub struct Catalog {
    store: Store,
    entries: RwLock<HashMap<Key, Arc<Entry>>>,
}

impl Catalog {
    /// Registers `templates` and loads everything registered so far.
    pub async fn load(store: Store, templates: &[Loaded]) -> Result<Catalog, store::Error> {
        for t in templates {
            store.register_template(&t.template).await.map_err(|e| {
                store::Error::Corrupt(format!(
                    "registering {} from {}: {e}",
                    t.template.key(),
                    t.source.display()
                ))
            })?;
        }
        let catalog = Catalog {
            store,
            entries: RwLock::new(HashMap::new()),
        };
        catalog.refresh().await?;
        Ok(catalog)
    }

    /// Re-reads the registry (templates other orchestrators registered since).
    pub async fn refresh(&self) -> Result<(), store::Error> {
        let mut entries = HashMap::new();
        for (order, (id, template)) in self.store.templates().await?.into_iter().enumerate() {
            match template.clone().validate("<registry>") {
                Ok(loaded) => {
                    entries.insert(key(&template), Arc::new(Entry { id, loaded, order }));
                }
                Err(e) => {
                    tracing::warn!(template = %template.key(), error = %e, "skipping invalid registered template")
                }
            }
        }
        *self.entries.write().unwrap_or_else(|p| p.into_inner()) = entries;
        Ok(())
    }

    /// The template `namespace/name@version`, or the newest version when `version` is `None`.
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<Option<Arc<Entry>>, store::Error> {
        if let Some(e) = self.lookup(namespace, name, version) {
            return Ok(Some(e));
        }
        self.refresh().await?;
        Ok(self.lookup(namespace, name, version))
    }

    fn lookup(&self, namespace: &str, name: &str, version: Option<&str>) -> Option<Arc<Entry>> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        match version {
            Some(v) => entries
                .get(&(namespace.to_owned(), name.to_owned(), v.to_owned()))
                .cloned(),
            None => entries
                .iter()
                .filter(|((ns, n, _), _)| ns == namespace && n == name)
                .max_by_key(|(_, e)| e.order)
                .map(|(_, e)| e.clone()),
        }
    }

    /// Every namespace with at least one template.
    pub fn namespaces(&self) -> Vec<String> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let mut ns: Vec<String> = entries.keys().map(|(n, _, _)| n.clone()).collect();
        ns.sort();
        ns.dedup();
        ns
    }
}

fn key(t: &TaskTemplate) -> Key {
    (t.namespace.clone(), t.name.clone(), t.version.clone())
}
