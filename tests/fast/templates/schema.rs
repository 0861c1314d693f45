//! The JSON Schemas of the template and schedule formats (`docs/schemas/`) are generated from
//! the code (`tasker templates schema`), every fixture template and schedule validates against
//! them, and every key they name is documented in `docs/templates.md`.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tasker::repo_root;

/// The checked-in schema of `kind`, and the one the code generates now.
fn schemas(kind: tasker_shared::template::SchemaKind, file: &str) -> (Value, Value) {
    let path = repo_root().join("docs/schemas").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shipped: Value = serde_json::from_str(&text).expect("a JSON schema");
    (shipped, tasker_shared::template::json_schema(kind))
}

/// Every `*.yaml` below `dir`, with whether it is in a `schedules` folder.
fn yaml_files(dir: &Path, out: &mut Vec<(PathBuf, bool)>) {
    for entry in std::fs::read_dir(dir).expect("a fixtures folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            let schedule = path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "schedules");
            out.push((path, schedule));
        }
    }
}

/// Every property name in a schema, wherever it is defined.
fn keys(schema: &Value, out: &mut std::collections::BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            map.values().for_each(|v| keys(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn the_shipped_schemas_are_the_ones_the_code_generates() {
    use tasker_shared::template::SchemaKind;
    for (kind, file) in [
        (SchemaKind::Template, "task-template.schema.json"),
        (SchemaKind::Schedule, "schedule.schema.json"),
    ] {
        let (shipped, generated) = schemas(kind, file);
        assert!(
            shipped == generated,
            "docs/schemas/{file} is not what the code generates: run `cargo make schemas`"
        );
    }
}

#[test]
fn every_fixture_validates_against_its_schema() {
    use tasker_shared::template::SchemaKind;
    let template = tasker_shared::template::json_schema(SchemaKind::Template);
    let schedule = tasker_shared::template::json_schema(SchemaKind::Schedule);
    let template = jsonschema::validator_for(&template).expect("a valid schema");
    let schedule = jsonschema::validator_for(&schedule).expect("a valid schema");
    let mut files = Vec::new();
    yaml_files(&repo_root().join("tests/fixtures"), &mut files);
    let mut checked = (0, 0);
    for (path, is_schedule) in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let doc: Value =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let validator = if is_schedule { &schedule } else { &template };
        let problems: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
        if is_schedule {
            checked.1 += 1;
        } else {
            checked.0 += 1;
        }
    }
    assert!(checked.0 >= 80 && checked.1 >= 1, "{checked:?}");
    // And the schema refuses what the loader refuses: an unknown key, a wrong type.
    for bad in [
        "namespace: a\nname: b\nversion: '1'\nsteps: [{name: s, handler: h, retyr: {}}]",
        "namespace: a\nname: b\nversion: '1'\nsteps: [{name: s, handler: h, type: sometimes}]",
        "namespace: a\nname: b\nversion: '1'\nsteps: [{name: s, handler: h, timeout_seconds: soon}]",
    ] {
        let doc: Value = serde_norway::from_str(bad).expect("YAML");
        assert!(!template.is_valid(&doc), "accepted: {bad}");
        assert!(
            tasker_shared::TaskTemplate::load(bad, "bad.yaml").is_err(),
            "loaded: {bad}"
        );
    }
}

#[test]
fn every_key_of_the_formats_is_documented() {
    use tasker_shared::template::SchemaKind;
    let docs = std::fs::read_to_string(repo_root().join("docs/templates.md")).expect("the docs");
    for (kind, at_least) in [(SchemaKind::Template, 30), (SchemaKind::Schedule, 9)] {
        let mut all = std::collections::BTreeSet::new();
        keys(&tasker_shared::template::json_schema(kind), &mut all);
        assert!(all.len() >= at_least, "{all:?}");
        let missing: Vec<_> = all
            .iter()
            .filter(|k| !docs.contains(&format!("| `{k}` |")))
            .collect();
        assert!(
            missing.is_empty(),
            "keys missing from docs/templates.md's tables: {missing:?}"
        );
    }
}
