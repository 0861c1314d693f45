//! The audit log: every request to a route that changes something (any method but GET) leaves
//! one append-only row in `audit_log` (migration 0021), answered or refused — who (the token's
//! id and name), what (method, route pattern, namespaces, task, other targets), when it
//! arrived, from where (the peer's address) and the answer's status.
//!
//! The API fills a [`Note`] while it serves a request (the token check says who, each namespace
//! check adds the namespace, a handler adds what it created) and hands the finished [`Entry`]
//! to the [`Audit`] writer, which writes what has arrived in one statement, off the request's
//! path: a request does not wait for its row, and the row's commit does not wait for the disk
//! (`Store::append_audit`). What that costs: rows of requests answered in the last moment
//! before a crash of the orchestrator (the batch being written, normally a few milliseconds'
//! worth) or of PostgreSQL (its WAL writer's last delay), and while PostgreSQL is unreachable
//! every row held since, up to [`MAX_PENDING`]; past that a row is dropped, counted
//! (`tasker_audit_dropped_total`) and logged. A graceful stop writes every row it holds before
//! the orchestrator exits.

mod writer;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use uuid::Uuid;

/// One audited request, as written to `audit_log`.
pub use crate::store::NewAuditEntry as Entry;
pub use writer::{Audit, MAX_PENDING};

/// Longest text kept of anything a request names (a path parameter, a header).
const MAX_TEXT: usize = 256;
/// Most namespaces one row names; past that, a last entry `…` says there were more.
const MAX_NAMESPACES: usize = 64;

/// What one request's handling learns of it for its audit row: cheap to clone (the API's
/// layers and handlers share it through the request's extensions). A detached note (the
/// default: a read, or a caller built outside a request) records nothing.
#[derive(Debug, Clone, Default)]
pub struct Note(Option<Arc<Mutex<Noted>>>);

#[derive(Debug, Default)]
struct Noted {
    token: Option<(i64, String)>,
    namespaces: Vec<String>,
    task_id: Option<Uuid>,
    target: Map<String, Value>,
}

impl Note {
    /// A note that records (one per audited request).
    pub fn recording() -> Note {
        Note(Some(Arc::default()))
    }

    fn with(&self, f: impl FnOnce(&mut Noted)) {
        if let Some(noted) = &self.0 {
            f(&mut noted.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// The request's token.
    pub fn token(&self, id: i64, name: &str) {
        self.with(|n| n.token = Some((id, clean(name))));
    }

    /// A namespace the request names (each once).
    pub fn namespace(&self, namespace: &str) {
        self.with(|n| {
            if n.namespaces.iter().any(|ns| ns == namespace) {
                return;
            }
            if n.namespaces.len() < MAX_NAMESPACES {
                n.namespaces.push(clean(namespace));
            } else if n.namespaces.len() == MAX_NAMESPACES {
                n.namespaces.push("…".into());
            }
        });
    }

    /// The task the request acts on.
    pub fn task(&self, id: Uuid) {
        self.with(|n| n.task_id = Some(id));
    }

    /// Something else the request acts on, by kind (`template`, `schedule`, `token`, ...).
    pub fn target(&self, kind: &str, value: impl Into<Value>) {
        let value = match value.into() {
            Value::String(s) => Value::String(clean(&s)),
            other => other,
        };
        self.with(|n| {
            n.target.insert(clean(kind), value);
        });
    }

    /// Moves what was noted into `entry`.
    pub fn fill(&self, entry: &mut Entry) {
        self.with(|n| {
            if let Some((id, name)) = n.token.take() {
                entry.token_id = Some(id);
                entry.token_name = Some(name);
            }
            entry.namespaces = std::mem::take(&mut n.namespaces);
            entry.task_id = n.task_id;
            entry.target = std::mem::take(&mut n.target);
        });
    }
}

/// `text` as kept: at most [`MAX_TEXT`] characters, control characters (NUL among them, which
/// PostgreSQL's text refuses) replaced, so no request can make its row unwritable.
pub fn clean(text: &str) -> String {
    text.chars()
        .take(MAX_TEXT)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_records_each_namespace_once_and_says_when_there_were_more() {
        let note = Note::recording();
        note.namespace("a");
        note.namespace("a");
        for i in 0..100 {
            note.namespace(&format!("n{i}"));
        }
        let mut entry = Entry::default();
        note.fill(&mut entry);
        assert_eq!(entry.namespaces[0], "a");
        assert_eq!(entry.namespaces.len(), MAX_NAMESPACES + 1);
        assert_eq!(entry.namespaces.last().map(String::as_str), Some("…"));
    }

    #[test]
    fn a_detached_note_records_nothing() {
        let note = Note::default();
        note.namespace("a");
        note.token(1, "t");
        let mut entry = Entry::default();
        note.fill(&mut entry);
        assert!(entry.namespaces.is_empty() && entry.token_id.is_none());
    }

    #[test]
    fn what_a_request_names_is_bounded_and_storable() {
        assert_eq!(clean("a\u{0}b\nc"), "a\u{fffd}b\u{fffd}c");
        assert_eq!(clean(&"x".repeat(1000)).chars().count(), MAX_TEXT);
    }
}
