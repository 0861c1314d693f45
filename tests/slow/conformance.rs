//! The conformance suite: the scenarios of `tests/conformance/scenarios.yaml` against the worker
//! of each language, started as its own process the way a user starts it (`scenarios`). Every
//! language must give the same results, final states and attempts. Beside them: every language
//! speaks the worker protocol (the checks of `protocol`, run here) and has the same fixture
//! templates (here); the four workers share one broker and one workflow (`polyglot`); each
//! language's client reads and sends what the Rust client does (`clients`, `events`); each
//! language's stream is read whole by another's client (`streams`).

#[path = "conformance/clients.rs"]
mod clients;
#[path = "../common/mod.rs"]
mod common;
#[path = "conformance/events.rs"]
mod events;
#[path = "conformance/polyglot.rs"]
mod polyglot;
#[path = "../conformance/protocol.rs"]
mod protocol;
#[path = "conformance/scenarios.rs"]
mod scenarios;
#[path = "conformance/streams.rs"]
mod streams;

use std::time::Duration;

use anyhow::Context;
use tasker::repo_root;

/// Jobs, outcomes and start options as `tasker-worker/protocol.schema.json` says, the same check
/// in every language (tests/conformance/protocol.rs).
#[test]
fn rust_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::rust_speaks_the_protocol()
}

#[test]
fn python_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("python")
}

#[test]
fn ruby_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("ruby")
}

#[test]
fn typescript_speaks_the_worker_protocol() -> anyhow::Result<()> {
    protocol::language_speaks_the_protocol("typescript")
}

const LANGUAGES: [&str; 4] = ["rust", "ruby", "python", "typescript"];

/// Runs `workers/<language>/conformance-client` with `args` (at most 120 s): what it printed,
/// once it exited 0.
async fn conformance_client(language: &str, args: &[String]) -> anyhow::Result<String> {
    let script = repo_root()
        .join("workers")
        .join(language)
        .join("conformance-client");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&script)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("{} did not finish", script.display()))??;
    anyhow::ensure!(
        out.status.success(),
        "{language}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

#[test]
fn every_language_has_the_same_templates() -> anyhow::Result<()> {
    let root = repo_root().join("tests/fixtures/task_templates");
    let rust: Vec<_> = std::fs::read_dir(root.join("rust"))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    for language in &LANGUAGES[1..] {
        // Engine cases run on the Rust worker only: batch processing edge cases (batch_numbers*)
        // and repair by hand (tests/slow/repair.rs).
        for file in rust.iter().filter(|f| {
            let f = f.to_string_lossy();
            !f.starts_with("batch_numbers")
                && f != "repairable.yaml"
                && f != "resolvable_decision.yaml"
        }) {
            let canonical = std::fs::read_to_string(root.join("rust").join(file))?;
            let theirs = std::fs::read_to_string(root.join(language).join(file))
                .with_context(|| format!("{language} lacks {file:?}"))?;
            assert_eq!(
                theirs,
                canonical.replace(
                    "namespace: rust_examples",
                    &format!("namespace: {language}_examples")
                ),
                "{language}/{file:?} differs from rust/{file:?} beyond its namespace"
            );
        }
    }
    Ok(())
}
