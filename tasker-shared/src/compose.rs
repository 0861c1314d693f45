//! Workflows made of workflows and of several languages: a step's own `namespace:` (the queue,
//! so the workers, that run it) and a child-workflow step (`child:`), which starts a task of
//! another template, waits for it and takes its result. This module holds what a template says
//! and how it is checked and compiled for the engine; the engine itself lives in the
//! orchestrator's SQL (`tasker_start_child`, the task-ended trigger, `tasker_wake`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The handler the engine stores for a child-workflow step: no worker runs it.
pub const CHILD_HANDLER: &str = "tasker:child";

/// How deep child workflows may nest by default: a task nobody started is at depth 0.
pub const DEFAULT_MAX_DEPTH: u32 = 8;

/// How many tasks may be started below one task nobody started, by default.
pub const DEFAULT_MAX_CHILD_TASKS: u32 = 1000;

/// How long a step routed to another namespace than its template's may wait for a worker by
/// default: a namespace no worker serves then fails the step visibly (`queue_timeout`) instead
/// of leaving it waiting without a word. A step's `queue_timeout_seconds` overrides it.
pub const CROSS_NAMESPACE_QUEUE_TIMEOUT_SECONDS: u64 = 300;

/// A child-workflow step's `child:` in a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChildSpec {
    /// The child template's name.
    pub template: String,
    /// The child template's namespace (the parent template's by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The child template's version: the newest registered when the parent task is created,
    /// by default (pinned then, so a running parent never changes what it starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The child's context: the parent's context whole by default; a JSON pointer giving the
    /// whole child context; or a map of child fields to JSON pointers. Pointers read
    /// `{"context": <the parent's context>, "parents": {<dependency>: <its result>}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextMapping>,
    /// What cancelling or failing the parent does to a child still running.
    #[serde(default, skip_serializing_if = "ParentCancel::is_default")]
    pub on_parent_cancel: ParentCancel,
}

/// How a child's context is made from its parent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ContextMapping {
    /// One pointer: the value it reads is the child's whole context.
    Whole(String),
    /// Each child field from a pointer.
    Fields(BTreeMap<String, String>),
}

/// What a parent's end (cancelled or failed) does to a child that still runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ParentCancel {
    /// The child is cancelled too, with its own open children (in the parent's transaction).
    #[default]
    Cancel,
    /// The child runs on; its end no longer concerns the parent.
    Abandon,
}

impl ParentCancel {
    pub fn as_str(self) -> &'static str {
        match self {
            ParentCancel::Cancel => "cancel",
            ParentCancel::Abandon => "abandon",
        }
    }

    fn is_default(&self) -> bool {
        *self == ParentCancel::Cancel
    }
}

/// A problem with a `child:`, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub problem: String,
}

impl ChildSpec {
    /// Checks the spec of step `step` whose dependencies are `depends_on`; `at` names it
    /// (`steps.<name>.child`).
    pub fn check(&self, at: &str, depends_on: &[String]) -> Result<(), Problem> {
        let bad = |field: &str, problem: String| Problem {
            field: format!("{at}.{field}"),
            problem,
        };
        let ident = |field: &str, value: &str| {
            if crate::names::is_identifier(value) {
                Ok(())
            } else {
                Err(bad(
                    field,
                    format!("{value:?} is not 1 to 128 ASCII letters, digits, `_`, `-` and `.`"),
                ))
            }
        };
        ident("template", &self.template)?;
        if let Some(ns) = &self.namespace {
            ident("namespace", ns)?;
        }
        if let Some(v) = &self.version {
            ident("version", v)?;
        }
        match &self.context {
            None => Ok(()),
            Some(ContextMapping::Whole(p)) => check_pointer(p, depends_on)
                .map(|_| ())
                .map_err(|e| bad("context", e)),
            Some(ContextMapping::Fields(fields)) => {
                if fields.len() > 256 {
                    return Err(bad("context", "at most 256 fields".into()));
                }
                for (k, p) in fields {
                    check_pointer(p, depends_on).map_err(|e| bad(&format!("context.{k}"), e))?;
                }
                Ok(())
            }
        }
    }

    /// The engine's form, stored with the step: the pinned template and the context mapping
    /// as path arrays (`{"whole": [..]}` or `{"fields": {k: [..]}}`, `null` for the parent's
    /// context whole). Call after [`ChildSpec::check`].
    pub fn compile(&self, template_id: uuid::Uuid, namespace: &str, version: &str) -> Value {
        let path = |p: &str| crate::json_check::pointer_path(p).unwrap_or_default();
        let context = match &self.context {
            None => Value::Null,
            Some(ContextMapping::Whole(p)) => json!({ "whole": path(p), "pointer": p }),
            Some(ContextMapping::Fields(f)) => json!({
                "fields": f.iter().map(|(k, p)| (k.clone(), json!(path(p)))).collect::<serde_json::Map<_, _>>(),
                "pointers": f,
            }),
        };
        json!({
            "template_id": template_id,
            "namespace": namespace,
            "name": self.template,
            "version": version,
            "context": context,
            "on_parent_cancel": self.on_parent_cancel.as_str(),
        })
    }
}

/// A pointer a child's context may read: `/context…` or `/parents/<a dependency>…`.
fn check_pointer(pointer: &str, depends_on: &[String]) -> Result<Vec<String>, String> {
    let path = crate::json_check::pointer_path(pointer).ok_or_else(|| {
        format!("{pointer:?} is not a JSON pointer (`/context/…` or `/parents/<step>/…`)")
    })?;
    match path.first().map(String::as_str) {
        Some("context") => Ok(path),
        Some("parents") => match path.get(1) {
            Some(step) if depends_on.contains(step) => Ok(path),
            Some(step) => Err(format!(
                "{pointer:?} reads the result of {step:?}, which is not among this step's \
                 depends_on ({})",
                depends_on.join(", ")
            )),
            None => Ok(path),
        },
        _ => Err(format!(
            "{pointer:?} must start with /context or /parents/<step>"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> ChildSpec {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn pointers_read_the_context_or_a_dependency() {
        let deps = vec!["price".to_string()];
        let ok = spec("template: t\ncontext: {a: /context/x, b: /parents/price/total}");
        assert_eq!(ok.check("steps.s.child", &deps), Ok(()));
        let whole = spec("template: t\ncontext: /parents/price");
        assert_eq!(whole.check("steps.s.child", &deps), Ok(()));
        let other = spec("template: t\ncontext: {a: /parents/other/x}");
        let e = other.check("steps.s.child", &deps).unwrap_err();
        assert_eq!(e.field, "steps.s.child.context.a");
        assert!(e.problem.contains("not among"), "{}", e.problem);
        let bad = spec("template: t\ncontext: {a: results/x}");
        assert!(bad.check("steps.s.child", &deps).is_err());
        let root = spec("template: t\ncontext: /elsewhere");
        assert!(root.check("steps.s.child", &deps).is_err());
        let name = spec("template: 'no way'");
        assert_eq!(
            name.check("steps.s.child", &deps).unwrap_err().field,
            "steps.s.child.template"
        );
    }

    #[test]
    fn compiled_paths_are_unescaped_segments() {
        let s = spec("template: t\ncontext: {a: /context/x~1y, b: /parents/p}");
        let c = s.compile(uuid::Uuid::nil(), "ns", "1");
        assert_eq!(c["context"]["fields"]["a"], json!(["context", "x/y"]));
        assert_eq!(c["context"]["fields"]["b"], json!(["parents", "p"]));
        assert_eq!(c["on_parent_cancel"], "cancel");
        let abandon = spec("template: t\non_parent_cancel: abandon");
        let c = abandon.compile(uuid::Uuid::nil(), "ns", "1");
        assert_eq!(c["context"], Value::Null);
        assert_eq!(c["on_parent_cancel"], "abandon");
    }
}
