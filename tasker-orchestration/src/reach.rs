//! Which namespaces a piece of work can reach, and whether a token covers them all: the one
//! answer every path that saves or starts work asks (a template's registration, a task's
//! creation alone or in bulk, a schedule when it is saved and when it fires, a backfill, a
//! child's start). A task reaches its template's namespace, each step's `namespace:`, each child
//! step's template's namespace and, through the registry, what those child templates reach in
//! turn.

use std::collections::{BTreeMap, HashSet};

use tasker_shared::TaskTemplate;
use tasker_shared::template;
use tasker_shared::template::Loaded;

use crate::catalog::Catalog;
use crate::store::{self, Principal};

/// Most templates followed down a tree of children (far more than
/// `orchestrator.max_child_depth` lets a task nest).
const MAX_TEMPLATES: usize = 256;

/// Every namespace work can reach, each with how it gets there (for the refusal's message).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reach(BTreeMap<String, String>);

impl Reach {
    /// What a task of `loaded` reaches: its own (`tasker_shared::template::reach`) and, down the
    /// tree, each child template's — the version a child step names, else the newest registered
    /// (what a task created now would pin). A child template not registered yet reaches only
    /// its namespace (its task cannot be created until it is).
    pub async fn of(catalog: &Catalog, loaded: &Loaded) -> Result<Reach, store::Error> {
        let mut reach = Reach(template::reach(&loaded.template));
        let mut seen = HashSet::from([loaded.template.key()]);
        let mut todo = children(&loaded.template);
        while let Some((namespace, name, version)) = todo.pop() {
            if seen.len() >= MAX_TEMPLATES {
                break;
            }
            let Some(entry) = catalog.get(&namespace, &name, version.as_deref()).await? else {
                continue;
            };
            let child = &entry.loaded.template;
            if !seen.insert(child.key()) {
                continue;
            }
            for (ns, how) in template::reach(child) {
                reach.0.entry(ns).or_insert(how);
            }
            todo.extend(children(child));
        }
        Ok(reach)
    }

    /// The namespaces, sorted.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The first namespace `covers` refuses, with how the work reaches it.
    pub fn uncovered(&self, covers: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
        self.0
            .iter()
            .find(|(ns, _)| !covers(ns))
            .map(|(ns, how)| (ns.as_str(), how.as_str()))
    }

    /// Whether saved work (a schedule's fire, a child step's start) that starts tasks of
    /// `loaded` may start one now for the token that saved it, looked up again in `store`
    /// (revoked, expired, or narrowed since): [`Reach::judge`] of [`Reach::of`]. Err says why not.
    pub async fn judge_saved(
        catalog: &Catalog,
        store: &store::Store,
        loaded: &Loaded,
        token_id: Option<i64>,
    ) -> Result<Result<(), String>, store::Error> {
        let reach = Reach::of(catalog, loaded).await?;
        let live = match token_id {
            Some(id) => store.principal_by_id(id).await?,
            None => None,
        };
        Ok(reach.judge(token_id, live.as_ref()))
    }

    /// Whether work saved or created with token `token_id` may go on now: Ok when it was made
    /// without a token (tokens off), else the token must still be live (`live`: what the store
    /// says of that id now) and cover every namespace reached. Err says why not.
    pub fn judge(&self, token_id: Option<i64>, live: Option<&Principal>) -> Result<(), String> {
        let Some(id) = token_id else {
            return Ok(());
        };
        let Some(token) = live else {
            return Err(format!(
                "the API token that saved it (id {id}) has been revoked or has expired"
            ));
        };
        match self.uncovered(|ns| token.covers(ns)) {
            None => Ok(()),
            Some((ns, how)) => Err(format!(
                "the API token that saved it ({:?}) no longer covers namespace {ns:?}, reached by \
                 {how}",
                token.name
            )),
        }
    }
}

/// The child templates a template starts: (namespace, name, version).
fn children(t: &TaskTemplate) -> Vec<(String, String, Option<String>)> {
    t.steps
        .iter()
        .filter_map(|s| s.child.as_ref())
        .map(|c| {
            (
                c.namespace.clone().unwrap_or_else(|| t.namespace.clone()),
                c.template.clone(),
                c.version.clone(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(namespaces: &str) -> Principal {
        Principal {
            id: 7,
            name: "ci".into(),
            scope: crate::store::Scope::Write,
            namespaces: Some(tasker_shared::namespaces::Patterns::parse(namespaces).unwrap()),
            expires_at: None,
        }
    }

    fn reach(pairs: &[(&str, &str)]) -> Reach {
        Reach(
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn work_goes_on_only_with_a_live_token_that_covers_every_namespace() {
        let r = reach(&[("a", "template a/t@1"), ("b", "child step \"x\"")]);
        assert_eq!(r.judge(None, None), Ok(()));
        assert!(r.judge(Some(7), None).unwrap_err().contains("revoked"));
        assert_eq!(r.judge(Some(7), Some(&principal("a,b"))), Ok(()));
        let refused = r.judge(Some(7), Some(&principal("a"))).unwrap_err();
        assert!(
            refused.contains("\"b\"") && refused.contains("child step"),
            "{refused}"
        );
        assert_eq!(r.uncovered(|ns| ns == "a"), Some(("b", "child step \"x\"")));
        assert_eq!(r.namespaces().collect::<Vec<_>>(), ["a", "b"]);
    }
}
