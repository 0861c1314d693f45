//! The worker protocol check in Rust, the one `workers/<lang>/conformance-protocol` runs in Ruby,
//! Python and TypeScript: the examples of `tests/conformance/protocol.json` against the schema
//! `tasker-worker/protocol.schema.json`, and against the core that speaks it — the jobs its
//! batch host hands out, the outcomes its parser takes and refuses, the start options it reads —
//! and the outcomes Rust handlers give for each case.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tasker::repo_root;
use tasker_shared::{Outcome, StepMessage};
use tasker_worker::{BatchHost, CompletionSink, HandlerError, HandlerHost, Job, StartOptions};

/// The schema, with `name` (`job`, `outcome`, `start_options`) as the root to validate against.
pub fn validator(name: &str) -> anyhow::Result<jsonschema::Validator> {
    let path = repo_root().join("tasker-worker/protocol.schema.json");
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    schema["$ref"] = json!(format!("#/definitions/{name}"));
    jsonschema::draft7::new(&schema).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn examples() -> anyhow::Result<Value> {
    let path = repo_root().join("tests/conformance/protocol.json");
    serde_json::from_str(&std::fs::read_to_string(&path)?).context("protocol.json")
}

fn check(validator: &jsonschema::Validator, what: &str, value: &Value) -> anyhow::Result<()> {
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    anyhow::ensure!(
        problems.is_empty(),
        "{what} {value}: {}",
        problems.join("; ")
    );
    Ok(())
}

/// `got` has every field `want` gives, equal (objects compared the same way, field by field).
pub fn matches(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| matches(gv, v))),
        _ => got == want,
    }
}

/// What the Rust worker's handler returns for a case's `handler` behaviour.
fn rust_handler(behaviour: &Value) -> Result<Value, HandlerError> {
    let text = |k: &str| behaviour[k].as_str().unwrap_or_default().to_owned();
    match behaviour["raises"].as_str() {
        None => Ok(behaviour["returns"].clone()),
        Some("permanent") => Err(HandlerError::permanent(
            behaviour["kind"].as_str().unwrap_or("PermanentError"),
            text("message"),
        )),
        Some("retryable") => {
            let e = HandlerError::retryable(text("kind"), text("message"));
            Err(match behaviour["retry_after"].as_f64() {
                Some(s) => e.retry_after(Duration::from_secs_f64(s)),
                None => e,
            })
        }
        Some(_) => Err(HandlerError::retryable("error", text("message"))),
    }
}

pub fn rust_speaks_the_protocol() -> anyhow::Result<()> {
    let examples = examples()?;
    let (job_schema, outcome_schema, options_schema) = (
        validator("job")?,
        validator("outcome")?,
        validator("start_options")?,
    );

    // Jobs: each example is what the core hands out for that step message, field for field.
    let host = BatchHost::new();
    let (sink, _reports) = CompletionSink::channel();
    for example in examples["jobs"].as_array().context("jobs")? {
        check(&job_schema, "example job", example)?;
        let id = example["id"].as_u64().context("job id")?;
        let message: StepMessage = serde_json::from_value(example.clone())?;
        host.submit(vec![Job::new(id, message)], &sink);
        let handed_out = host.next_batch(1, Duration::from_secs(5));
        let mut wire = serde_json::to_value(&handed_out)?[0].take();
        check(&job_schema, "handed-out job", &wire)?;
        // The one field written back differently: the instant's notation.
        wire["dispatched_at"] = example["dispatched_at"].clone();
        anyhow::ensure!(&wire == example, "handed out {wire}, example {example}");
    }

    // Cases: the outcome a Rust handler gives, as the core would encode it.
    let job_id = examples["jobs"][0]["id"].clone();
    for case in examples["cases"].as_array().context("cases")? {
        let outcome = match rust_handler(&case["handler"]) {
            Ok(result) => Outcome::Success { result },
            Err(e) => Outcome::from(e),
        };
        let mut wire = serde_json::to_value(&outcome)?;
        wire["id"] = job_id.clone();
        check(
            &outcome_schema,
            &format!("case {}: outcome", case["name"]),
            &wire,
        )?;
        anyhow::ensure!(
            matches(&wire, &case["outcome"]) && wire["id"] == job_id,
            "case {}: outcome {wire}, want {}",
            case["name"],
            case["outcome"]
        );
    }

    // Outcomes: the schema and the core's parser agree on what is one.
    for outcome in examples["outcomes"].as_array().context("outcomes")? {
        check(&outcome_schema, "example outcome", outcome)?;
        host.complete_json(&json!([outcome]).to_string())
            .with_context(|| format!("the core refused {outcome}"))?;
    }
    for bad in examples["invalid_outcomes"].as_array().context("invalid")? {
        let outcome = &bad["outcome"];
        anyhow::ensure!(
            !outcome_schema.is_valid(outcome),
            "the schema takes {} ({outcome})",
            bad["why"]
        );
        anyhow::ensure!(
            host.complete_json(&json!([outcome]).to_string()).is_err(),
            "the core takes {} ({outcome})",
            bad["why"]
        );
    }

    // Start options: likewise.
    for options in examples["start_options"].as_array().context("options")? {
        check(&options_schema, "start options", options)?;
        StartOptions::from_json(&options.to_string())?;
    }
    for bad in examples["invalid_start_options"]
        .as_array()
        .context("invalid")?
    {
        let options = &bad["options"];
        anyhow::ensure!(
            !options_schema.is_valid(options),
            "the schema takes {}",
            bad["why"]
        );
        anyhow::ensure!(
            StartOptions::from_json(&options.to_string()).is_err(),
            "the core takes {}",
            bad["why"]
        );
    }
    Ok(())
}

/// Runs `workers/<language>/conformance-protocol`, which runs the same check in that language.
pub fn language_speaks_the_protocol(language: &str) -> anyhow::Result<()> {
    let script = repo_root().join(format!("workers/{language}/conformance-protocol"));
    let started = Instant::now();
    let out = std::process::Command::new(&script)
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed ({}) after {:?}:\n{}\n{}",
        script.display(),
        out.status,
        started.elapsed(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
