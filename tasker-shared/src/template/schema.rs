//! The JSON Schemas of the template and schedule file formats, generated from the types that
//! read them (their serde attributes and doc comments), so an editor checks a file as Tasker
//! will: unknown keys, types, the values of each list. What involves several steps (a
//! dependency that names no step, a cycle) and the bounds are for `tasker templates validate`.
//! Shipped as `docs/schemas/*.schema.json`, which a test keeps equal to these.

use serde_json::{Value, json};

use super::TaskTemplate;
use crate::time::ScheduleSpec;

/// Which file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// A task template (`templates/*.yaml`).
    Template,
    /// A schedule (`templates/schedules/*.yaml`, or the body of `POST /v1/schedules`).
    Schedule,
}

/// The JSON Schema (draft 2020-12) of a file format.
pub fn json_schema(kind: SchemaKind) -> Value {
    let (schema, title, about) = match kind {
        SchemaKind::Template => (
            schemars::schema_for!(TaskTemplate),
            "Tasker task template",
            "A workflow: its steps, their dependencies, handlers and policies (docs/templates.md).",
        ),
        SchemaKind::Schedule => (
            schemars::schema_for!(ScheduleSpec),
            "Tasker schedule",
            "Starts a task of a template at each fire of a cron expression in a time zone \
             (docs/templates.md#schedule-files).",
        ),
    };
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| json!({}));
    if let Some(map) = value.as_object_mut() {
        map.insert("title".into(), json!(title));
        map.insert("description".into(), json!(about));
    }
    value
}
