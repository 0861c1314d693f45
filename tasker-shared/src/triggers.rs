//! Triggers: a template's `on:` list, the events that start its tasks. Each names an event of
//! the template's namespace, the conditions the event must meet (`if:`) and how the new task's
//! context is made from it (`context:`). Conditions are JSON Schemas, one per JSON pointer into
//! the event: the validator templates already use for their contexts (a maintained library,
//! compiled once at registration), so there is no second expression language to learn.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::compose::ContextMapping;
use crate::json_check::{event_pointer, pointer_path};
use crate::start_controls::{Debounce, DebounceSpec, Dedupe, DedupeSpec};

/// Most triggers one template may have.
pub const MAX_TRIGGERS: usize = 16;
/// Most conditions one trigger may have.
pub const MAX_CONDITIONS: usize = 32;

/// One entry of a template's `on:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// The event's name, in the template's namespace: 1 to 64 ASCII letters, digits, `_`, `-`
    /// and `.` (such as `order.created`).
    pub event: String,
    /// Conditions, all of which must hold: a JSON pointer into the event (`/data/total`,
    /// `/key`, `/name`) and the JSON Schema its value must match. A pointer that finds nothing
    /// fails its condition.
    #[serde(default, rename = "if", skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, Value>")]
    pub conditions: BTreeMap<String, Value>,
    /// The task's context: the event's `data` (an object) by default; a JSON pointer into the
    /// event giving the whole context; or a map of context fields to pointers (a pointer that
    /// finds nothing gives `null`). Pointers read `{"id", "name", "key", "data"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextMapping>,
    /// One task per key for `ttl`, even after it is purged: `{key: /data/order_id, ttl: 24h}`
    /// (`key`: a pointer into the event, `/key` by default). Not with `debounce`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<DedupeSpec>,
    /// One task per burst of events for a key: `{key: /data/customer_id, period: 5s, max: 1m,
    /// mode: trailing}` (`key`: a pointer into the event, `/key` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce: Option<DebounceSpec>,
}

/// The pointer a control's key is read at when it names none: the event's `key`.
pub const DEFAULT_KEY_POINTER: &str = "/key";

/// A trigger checked and compiled: its conditions' schemas built once.
#[derive(Debug, Clone)]
pub struct Trigger {
    pub spec: TriggerSpec,
    conditions: Vec<(Vec<String>, Arc<jsonschema::Validator>)>,
    /// Its dedupe window or debounce, with where its key is read.
    pub control: Option<(Vec<String>, Control)>,
}

/// A trigger's start control, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Dedupe(Dedupe),
    Debounce(Debounce),
}

/// Why a trigger is refused at registration: the field (under `on[i]`) and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub problem: String,
}

/// Checks and compiles a template's `on:` list.
pub fn compile(specs: &[TriggerSpec]) -> Result<Vec<Trigger>, Problem> {
    if specs.len() > MAX_TRIGGERS {
        return Err(Problem {
            field: "on".into(),
            problem: format!("at most {MAX_TRIGGERS} triggers (got {})", specs.len()),
        });
    }
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| spec.compile(&format!("on[{i}]")))
        .collect()
}

impl TriggerSpec {
    fn compile(&self, at: &str) -> Result<Trigger, Problem> {
        let bad = |field: &str, problem: String| Problem {
            field: format!("{at}.{field}"),
            problem,
        };
        if !crate::time::is_signal_name(&self.event) {
            return Err(bad(
                "event",
                format!(
                    "{:?} is not 1 to 64 ASCII letters, digits, `_`, `-` and `.`",
                    self.event
                ),
            ));
        }
        if self.conditions.len() > MAX_CONDITIONS {
            return Err(bad("if", format!("at most {MAX_CONDITIONS} conditions")));
        }
        let mut conditions = Vec::with_capacity(self.conditions.len());
        for (pointer, schema) in &self.conditions {
            let field = format!("if.{pointer}");
            let path = event_pointer(pointer).map_err(|p| bad(&field, p))?;
            crate::json_check::check(schema, crate::json_check::MAX_DEPTH)
                .map_err(|p| bad(&field, p.to_string()))?;
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| bad(&field, format!("not a JSON Schema: {e}")))?;
            conditions.push((path, Arc::new(validator)));
        }
        match &self.context {
            None => {}
            Some(ContextMapping::Whole(p)) => {
                event_pointer(p).map_err(|e| bad("context", e))?;
            }
            Some(ContextMapping::Fields(fields)) => {
                if fields.len() > 256 {
                    return Err(bad("context", "at most 256 fields".into()));
                }
                for (k, p) in fields {
                    event_pointer(p).map_err(|e| bad(&format!("context.{k}"), e))?;
                }
            }
        }
        let key_at = |field: &str, key: &Option<String>| {
            event_pointer(key.as_deref().unwrap_or(DEFAULT_KEY_POINTER))
                .map_err(|p| bad(&format!("{field}.key"), p))
        };
        let control = match (&self.dedupe, &self.debounce) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "debounce",
                    "not with `dedupe`: give one of them".into(),
                ));
            }
            (Some(d), None) => {
                let window = d.check(at).map_err(|e| bad("dedupe", e.to_string()))?;
                Some((key_at("dedupe", &d.key)?, Control::Dedupe(window)))
            }
            (None, Some(d)) => {
                let debounce = d.check(at).map_err(|e| bad("debounce", e.to_string()))?;
                Some((key_at("debounce", &d.key)?, Control::Debounce(debounce)))
            }
            (None, None) => None,
        };
        Ok(Trigger {
            spec: self.clone(),
            conditions,
            control,
        })
    }
}

/// The document triggers read: an event's `id`, `name`, `key` and `data`.
pub fn event_document(id: &str, name: &str, key: Option<&str>, data: &Value) -> Value {
    json!({ "id": id, "name": name, "key": key, "data": data })
}

fn at<'v>(doc: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(doc, |v, part| match v {
        Value::Object(m) => m.get(part),
        Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

impl Trigger {
    /// Whether the event (its [`event_document`]) is one of this trigger's: its name, and
    /// every condition.
    pub fn matches(&self, name: &str, doc: &Value) -> bool {
        self.spec.event == name
            && self
                .conditions
                .iter()
                .all(|(path, schema)| at(doc, path).is_some_and(|v| schema.is_valid(v)))
    }

    /// The context of the task this event starts; an error when it is not a JSON object.
    pub fn context(&self, doc: &Value) -> Result<Value, String> {
        let read = |p: &str| {
            pointer_path(p)
                .and_then(|path| at(doc, &path).cloned())
                .unwrap_or(Value::Null)
        };
        let context = match &self.spec.context {
            None => doc.get("data").cloned().unwrap_or(Value::Null),
            Some(ContextMapping::Whole(p)) => read(p),
            Some(ContextMapping::Fields(fields)) => Value::Object(
                fields
                    .iter()
                    .map(|(k, p)| (k.clone(), read(p)))
                    .collect::<Map<_, _>>(),
            ),
        };
        if context.is_object() {
            Ok(context)
        } else {
            Err(format!(
                "the context this trigger makes is not a JSON object (got {})",
                kind(&context)
            ))
        }
    }
}

impl Trigger {
    /// The key of its start control in this event, if it has one: the string or number its
    /// pointer finds (a number as written), 1 to 255 bytes; an error when it finds neither.
    pub fn control_key(&self, doc: &Value) -> Result<Option<(String, Control)>, String> {
        let Some((path, control)) = &self.control else {
            return Ok(None);
        };
        let key = match at(doc, path) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            other => {
                return Err(format!(
                    "the trigger's key /{} finds {} in the event, not a string or a number",
                    path.join("/"),
                    other.map_or("nothing", kind)
                ));
            }
        };
        crate::start_controls::check_key("key", Some(&key))
            .map(|k| Some((k, *control)))
            .map_err(|e| format!("the trigger's key /{}: {e}", path.join("/")))
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(yaml: &str) -> Result<Trigger, Problem> {
        let spec: TriggerSpec = serde_norway::from_str(yaml).expect("parses");
        compile(&[spec]).map(|mut t| t.remove(0))
    }

    #[test]
    fn conditions_are_schemas_at_pointers_and_all_must_hold() {
        let t = trigger(
            "event: order.created\nif:\n  /data/total: {minimum: 100}\n  /key: {const: eu}\n",
        )
        .expect("compiles");
        let doc = |total: i64, key: &str| {
            event_document("e1", "order.created", Some(key), &json!({ "total": total }))
        };
        assert!(t.matches("order.created", &doc(150, "eu")));
        assert!(!t.matches("order.created", &doc(50, "eu")));
        assert!(!t.matches("order.created", &doc(150, "us")));
        assert!(!t.matches("order.paid", &doc(150, "eu")));
        let missing = event_document("e1", "order.created", Some("eu"), &json!({}));
        assert!(
            !t.matches("order.created", &missing),
            "a missing value fails"
        );
    }

    #[test]
    fn the_context_is_the_data_a_pointer_or_a_map_of_pointers() {
        let doc = event_document("e1", "x", Some("k"), &json!({ "a": { "b": 1 }, "c": [7] }));
        let whole = trigger("event: x\n").expect("compiles");
        assert_eq!(
            whole.context(&doc),
            Ok(json!({ "a": { "b": 1 }, "c": [7] }))
        );
        let part = trigger("event: x\ncontext: /data/a\n").expect("compiles");
        assert_eq!(part.context(&doc), Ok(json!({ "b": 1 })));
        let fields = trigger(
            "event: x\ncontext: {b: /data/a/b, first: /data/c/0, key: /key, none: /data/z}\n",
        )
        .expect("compiles");
        assert_eq!(
            fields.context(&doc),
            Ok(json!({ "b": 1, "first": 7, "key": "k", "none": null }))
        );
        let scalar = trigger("event: x\ncontext: /data/a/b\n").expect("compiles");
        assert!(scalar.context(&doc).unwrap_err().contains("a number"));
    }

    #[test]
    fn a_control_reads_its_key_from_the_event_or_says_why_not() {
        let t = trigger("event: x\ndebounce: {key: /data/customer, period: 5s}\n").expect("ok");
        let doc = |data: Value| event_document("e1", "x", Some("k"), &data);
        let (key, control) = t
            .control_key(&doc(json!({ "customer": 42 })))
            .expect("a number")
            .expect("a control");
        assert_eq!(key, "42");
        assert!(matches!(control, Control::Debounce(d) if d.period.as_secs() == 5));
        let missing = t.control_key(&doc(json!({}))).expect_err("no key");
        assert!(
            missing.contains("/data/customer finds nothing"),
            "{missing}"
        );
        let by_event_key = trigger("event: x\ndedupe: {ttl: 24h}\n").expect("ok");
        assert_eq!(
            by_event_key
                .control_key(&doc(json!({})))
                .expect("the event's key")
                .map(|(k, _)| k),
            Some("k".to_owned())
        );
        assert_eq!(
            trigger("event: x\ndedupe: {ttl: 1h}\ndebounce: {period: 5s}\n")
                .expect_err("both")
                .field,
            "on[0].debounce"
        );
        assert_eq!(
            trigger("event: x\ndedupe: {ttl: 0s}\n")
                .expect_err("too short")
                .field,
            "on[0].dedupe"
        );
    }

    #[test]
    fn bad_triggers_name_their_field() {
        let problem = |yaml: &str| trigger(yaml).expect_err("refused").field;
        assert_eq!(problem("event: 'no spaces'\n"), "on[0].event");
        assert_eq!(
            problem("event: x\nif: {/context/a: {}}\n"),
            "on[0].if./context/a"
        );
        assert_eq!(
            problem("event: x\nif: {/data/a: {type: 7}}\n"),
            "on[0].if./data/a"
        );
        assert_eq!(problem("event: x\ncontext: {a: data}\n"), "on[0].context.a");
        let many = vec![
            TriggerSpec {
                event: "x".into(),
                conditions: BTreeMap::new(),
                context: None,
                dedupe: None,
                debounce: None,
            };
            MAX_TRIGGERS + 1
        ];
        assert_eq!(compile(&many).expect_err("too many").field, "on");
    }
}
