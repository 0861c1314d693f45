//! Parent results carried by reference, read for a binding a page at a time (the convergence
//! step of a large fan-out): the core's HTTP client on the core's runtime, the answer handed to
//! whichever thread (or Node's runtime) asked.

use std::sync::Arc;

use uuid::Uuid;

use super::Error;
use crate::references::References;

/// One page: a JSON object of step name to result, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentPage {
    pub results: String,
    pub next: Option<String>,
}

/// Reads pages on the core's runtime; cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct ParentPages {
    pub(super) references: Arc<References>,
    pub(super) runtime: tokio::runtime::Handle,
}

impl ParentPages {
    /// The page after the cursor `after` (the first page with `None`), waiting on this thread.
    pub(super) fn blocking(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, Error> {
        self.start(task, step, after)?
            .blocking_recv()
            .map_err(|_| Error::Stopped)?
    }

    /// [`blocking`](Self::blocking) for a binding with a runtime of its own (Node).
    pub(super) async fn awaited(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<ParentPage, Error> {
        self.start(task, step, after)?
            .await
            .map_err(|_| Error::Stopped)?
    }

    /// Reads the page on the core's runtime (whose HTTP client it is); the answer arrives on
    /// the receiver, which sees the sender dropped if the runtime stopped first.
    fn start(
        &self,
        task: &str,
        step: &str,
        after: Option<&str>,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<ParentPage, Error>>, Error> {
        let id = |s: &str| {
            Uuid::parse_str(s).map_err(|_| {
                Error::InvalidArgument(format!("{s:?} is not a task, step or cursor id"))
            })
        };
        let (task, step, after) = (id(task)?, id(step)?, after.map(id).transpose()?);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let references = self.references.clone();
        self.runtime.spawn(async move {
            let page = references
                .parent_results_text(task, step, after)
                .await
                .map(|p| ParentPage {
                    results: p.parent_results.get().to_owned(),
                    next: p.next.map(|n| n.to_string()),
                })
                .map_err(Error::Unavailable);
            let _ = tx.send(page);
        });
        Ok(rx)
    }
}
