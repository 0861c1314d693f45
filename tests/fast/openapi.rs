//! `/openapi.json`: the OpenAPI 3.1 document the orchestrator generates from its routes. Every
//! route the README's API table names is in it, and nothing else; every operation in it is served
//! (a request reaches its handler, not the "no such route" fallback); every schema it refers to is
//! defined. (A route registered without its operation is refused earlier, by clippy.toml.)

use std::collections::BTreeSet;

use serde_json::Value;
use tasker::{TestEnv, repo_root, target_dir};

/// `(METHOD, /path)` of every operation in the document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if ["get", "post", "put", "delete", "patch", "head"].contains(&method.as_str()) {
                ops.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    ops
}

/// `(METHOD, /path)` of every route the README's API table names (`` `GET /v1/tasks?…` ``).
fn readme_routes() -> BTreeSet<(String, String)> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let start = readme.find("## The API").expect("the README's API section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut routes = BTreeSet::new();
    for line in section[..end].lines().filter(|l| l.starts_with("| `")) {
        let cell = line.split(" | ").next().unwrap_or_default();
        for code in cell.split('`').skip(1).step_by(2) {
            if let Some((method, rest)) = code.split_once(' ')
                && ["GET", "POST", "DELETE", "PUT", "PATCH"].contains(&method)
            {
                let path = rest.split('?').next().unwrap_or(rest);
                routes.insert((method.to_owned(), path.to_owned()));
            }
        }
    }
    routes
}

/// Every `$ref` in `v`.
fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn the_document_names_exactly_the_routes_of_the_readme() {
    let doc = serde_json::to_value(tasker_orchestration::api::openapi()).unwrap();
    assert!(
        doc["openapi"]
            .as_str()
            .unwrap_or_default()
            .starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let documented = operations(&doc);
    let readme = readme_routes();
    assert!(readme.len() >= 20, "the README's API table: {readme:?}");
    let undocumented: Vec<_> = readme.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "in the README, missing from /openapi.json: {undocumented:?}"
    );
    let unlisted: Vec<_> = documented.difference(&readme).collect();
    assert!(
        unlisted.is_empty(),
        "in /openapi.json, missing from the README's API table: {unlisted:?}"
    );

    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r} is not a schema reference"));
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{r} is not defined"
        );
    }
    // Every operation but the open ones asks for the bearer token.
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
}

/// The repository's `openapi.json` is the document the code generates, to the byte: the Python
/// and TypeScript clients are generated from that file (their build.sh), so a route or a field
/// changed without it would not reach them.
#[test]
fn the_committed_document_is_current() {
    let file = repo_root().join("openapi.json");
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    let current = tasker_orchestration::api::openapi_json();
    assert!(
        committed.trim_end() == current,
        "{} is not the document the code generates; rewrite it with `cargo make openapi` \
         (or `cargo run -p tasker-orchestration --bin tasker-orchestrator -- openapi > \
         openapi.json`) and commit it",
        file.display()
    );
}

/// The document passes openapi-spec-validator (the Python venv that workers/python/build.sh
/// makes has it): what code generators and API tools check before they read it. And the Ruby
/// client, written by hand, reads nothing it does not promise (workers/ruby/test/contract_check.rb;
/// the Python and TypeScript clients are generated from the document).
#[test]
fn the_document_passes_the_validator_and_the_ruby_client_agrees_with_it() -> anyhow::Result<()> {
    let doc = tasker_orchestration::api::openapi_json();
    let dir = target_dir().join("openapi");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("openapi.json");
    std::fs::write(&file, doc)?;
    let python = repo_root().join("workers/python/.venv/bin/python");
    let out = std::process::Command::new(&python)
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: {e} (workers/python/build.sh makes it)",
                python.display()
            )
        })?;
    assert!(
        out.status.success(),
        "openapi-spec-validator refused the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Every field the Ruby client reads is in the answer's schema (a field renamed on the
    // server fails here, not in a user's program).
    let out = std::process::Command::new("ruby")
        .arg(repo_root().join("workers/ruby/test/contract_check.rb"))
        .arg(&file)
        .output()
        .map_err(|e| anyhow::anyhow!("ruby: {e}"))?;
    assert!(
        out.status.success(),
        "the Ruby client reads what the document does not promise:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// An error's `code` is an enum of every code the API gives (the orchestrator refuses, in debug
/// builds, to answer with one missing from it: every test that meets an error checks that), and
/// every code an operation's responses name is in it.
#[test]
fn error_codes_are_an_enum_and_every_documented_code_is_in_it() {
    let doc = serde_json::to_value(tasker_orchestration::api::openapi()).unwrap();
    assert_eq!(
        doc["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
    let codes: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode is an enum")
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    let declared: BTreeSet<String> = tasker_shared::api::ERROR_CODES
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(codes, declared);
    // Words in backticks that are field names, not codes.
    let fields = ["delay", "from", "namespace", "signal_id", "to"];
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().into_iter().flatten() {
                if !status.starts_with('4') && !status.starts_with('5') {
                    continue;
                }
                let text = response["description"].as_str().unwrap_or_default();
                for code in text.split('`').skip(1).step_by(2) {
                    let looks_like_code = code.chars().all(|c| c.is_ascii_lowercase() || c == '_');
                    if looks_like_code && !fields.contains(&code) {
                        assert!(
                            codes.contains(code),
                            "{method} {path} {status} names `{code}`, not in ERROR_CODES"
                        );
                    }
                }
            }
        }
    }
}

/// Every operation documents the errors any request may meet — 500, and for those that take a
/// token 401 and 403 — each with the API's error body.
#[test]
fn every_operation_documents_the_common_errors() {
    let doc = serde_json::to_value(tasker_orchestration::api::openapi()).unwrap();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let open = op["security"] == serde_json::json!([{}]);
            let wanted: &[&str] = if open {
                &["500"]
            } else {
                &["401", "403", "500"]
            };
            for status in wanted {
                let answer = &op["responses"][*status];
                assert!(
                    answer["content"]["application/json"]["schema"]["$ref"]
                        == "#/components/schemas/ErrorBody",
                    "{method} {path} does not document {status}: {answer}"
                );
            }
        }
    }
}

/// States are enums in the document, each value one the engine has (a step's `waiting` is the
/// API's name for an enqueued step that waits on the orchestrator: a wait or a child).
#[test]
fn states_are_enums_of_the_engines_states() {
    let doc = serde_json::to_value(tasker_orchestration::api::openapi()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let values = |name: &str| -> Vec<String> {
        schemas[name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is not an enum: {}", schemas[name]))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    for (schema, name) in [("Task", "TaskStateName"), ("ChildLink", "TaskStateName")] {
        assert_eq!(
            schemas[schema]["properties"]["state"]["$ref"],
            format!("#/components/schemas/{name}")
        );
    }
    assert_eq!(
        schemas["Step"]["properties"]["state"]["$ref"],
        "#/components/schemas/StepStateName"
    );
    let tasks = values("TaskStateName");
    assert_eq!(tasks.len(), 5, "{tasks:?}");
    for s in &tasks {
        serde_json::from_value::<tasker_shared::TaskState>(serde_json::json!(s))
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    let steps = values("StepStateName");
    assert_eq!(steps.len(), 10, "{steps:?}");
    // `waiting` (a step the orchestrator holds) and `running` (one a worker reported) are how
    // the API names an engine state, not engine states.
    for s in steps
        .iter()
        .filter(|s| !matches!(s.as_str(), "waiting" | "running"))
    {
        serde_json::from_value::<tasker_shared::StepState>(serde_json::json!(s))
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// Code generators name a method after each operation: every operation has an `operationId`,
/// and no two share one.
#[test]
fn every_operation_has_its_own_id() {
    let doc = serde_json::to_value(tasker_orchestration::api::openapi()).unwrap();
    let mut seen = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            if let Some(other) = seen.insert(id.to_owned(), format!("{method} {path}")) {
                panic!("operationId {id:?} is both {other} and {method} {path}");
            }
        }
    }
    assert!(seen.len() >= 50, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_is_served() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let served: Value = http
        .get(format!("{}/openapi.json", o.url()))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let doc = serde_json::to_value(tasker_orchestration::api::openapi())?;
    assert_eq!(served, doc, "/openapi.json is the generated document");

    let id = uuid::Uuid::now_v7().to_string();
    for (method, path) in operations(&doc) {
        // Any value reaches the handler; one that names nothing is its 4xx, not the router's.
        let url = path
            .replace(
                "{id}",
                if path.contains("dead-letters") {
                    "1"
                } else {
                    &id
                },
            )
            .replace("{step}", &id)
            .replace("{namespace}", "no_such_namespace")
            .replace("{name}", "no_such_name");
        if path.ends_with("/events") {
            continue; // a stream: checked by tests/fast/dashboard.rs
        }
        let method = reqwest::Method::from_bytes(method.as_bytes())?;
        let resp = http
            .request(method.clone(), format!("{}{url}", o.url()))
            .send()
            .await?;
        let status = resp.status();
        let body = resp.text().await?;
        let code = serde_json::from_str::<Value>(&body)
            .ok()
            .map(|v| v["error"]["code"].clone());
        assert!(
            status != reqwest::StatusCode::METHOD_NOT_ALLOWED
                && code != Some(Value::from("no_such_route")),
            "{method} {path} is documented but not served: {status} {body}"
        );
    }

    // Each answer is counted by its route's pattern, method and status, a path no route serves
    // as `unmatched` (the counters are the process's: tests run side by side, so at least).
    let missing = http
        .get(format!("{}/no/such/route/{id}", o.url()))
        .send()
        .await?;
    assert_eq!(missing.status(), reqwest::StatusCode::NOT_FOUND);
    let metrics = http
        .get(format!("{}/metrics", o.url()))
        .send()
        .await?
        .text()
        .await?;
    let count = |labels: &str| -> f64 {
        let line = format!("tasker_http_requests_total{{{labels}}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str())?.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "no {line} in /metrics:\n{}",
                    metrics
                        .lines()
                        .filter(|l| l.starts_with("tasker_http_requests_total"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            })
    };
    assert!(count(r#"route="/v1/tasks/{id}",method="GET",status="404""#) >= 1.0);
    assert!(count(r#"route="/v1/tasks",method="POST",status="400""#) >= 1.0);
    assert!(count(r#"route="unmatched",method="GET",status="404""#) >= 1.0);
    assert!(
        metrics
            .contains(r#"tasker_http_request_seconds_count{route="/v1/tasks/{id}",method="GET"}"#),
        "no request time histogram"
    );
    o.stop().await;
    env.cleanup().await
}
