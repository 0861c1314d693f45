//! Each language's packages as people install them. `cargo-make/package.sh` (`cargo make
//! package`) builds all six into one folder, once for every test here: per language a client-only
//! package (pure, no native code) and the worker package (the native core for this platform),
//! which depends on its client. Each test installs from that folder into a fresh folder outside
//! the repository (a venv, an empty npm project, a gem folder of its own) and uses it from there
//! only.
//!
//! - Workers: the package's worker command runs a handler file of the test's own for a two-step
//!   template in a namespace no orchestrator has seen (the worker registers it), and a client
//!   program in the same language submits a task and waits for it, against a real orchestrator.
//!   The Python files are type-checked against the installed wheels (mypy --strict, and mypy's
//!   stubtest compares the native module's stub with the module); the TypeScript ones are written
//!   as an ES module (the handlers) and a CommonJS one (the client), compiled with the package's
//!   types in node16 and nodenext modes, and run as compiled.
//! - Clients alone: a program submits `rust_examples/linear` (a Rust worker in the test serves
//!   it), waits for it, and reports what it loaded: no native module of ours may be loaded (the
//!   process's own list and /proc/self/maps), and the folder may hold no native file of ours.
//!
//! One module per language, each with its worker test and its client-only test: `python` (the
//! wheels), `typescript` (the tarballs), `ruby` (the gems).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tasker::{TestEnv, repo_root, target_dir};
use tokio::process::Command;

#[path = "packages/python.rs"]
mod python;
#[path = "packages/ruby.rs"]
mod ruby;
#[path = "packages/typescript.rs"]
mod typescript;

/// What `cargo-make/package.sh` built: the folder and the paths it printed.
#[derive(Debug)]
struct Packages {
    dir: PathBuf,
    files: Vec<PathBuf>,
}

impl Packages {
    /// The package `name` (`tasker-workflows`, `tasker-workflows-client`) of one kind: `.whl`,
    /// `.tgz` or `.gem`. Wheels spell the name with underscores.
    fn file(&self, name: &str, extension: &str) -> anyhow::Result<&Path> {
        self.files
            .iter()
            .find(|path| {
                let file = path.file_name().unwrap_or_default().to_string_lossy();
                let file = file.replace('_', "-");
                file.ends_with(extension)
                    && file
                        .strip_prefix(&format!("{name}-"))
                        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
            .map(PathBuf::as_path)
            .with_context(|| format!("no {name} *{extension} among {:?}", self.files))
    }
}

/// Builds the six packages once for all the tests in this binary (they share cargo's target
/// folder and two cores; the first test to get here builds, the others wait for it).
async fn packages() -> anyhow::Result<&'static Packages> {
    static PACKAGES: tokio::sync::OnceCell<Packages> = tokio::sync::OnceCell::const_new();
    PACKAGES
        .get_or_try_init(|| async {
            let script = repo_root().join("cargo-make/package.sh");
            let dir = target_dir().join("packages");
            let out = tokio::time::timeout(
                Duration::from_secs(1800),
                Command::new(&script)
                    .arg(&dir)
                    .stderr(Stdio::inherit())
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .with_context(|| format!("{} took over 30 minutes", script.display()))??;
            let stdout = String::from_utf8_lossy(&out.stdout);
            anyhow::ensure!(out.status.success(), "{}: {}", script.display(), out.status);
            let files: Vec<PathBuf> = stdout.lines().map(PathBuf::from).collect();
            anyhow::ensure!(
                files.len() == 6 && files.iter().all(|f| f.is_file() && f.starts_with(&dir)),
                "{} printed no six packages in {}: {stdout}",
                script.display(),
                dir.display()
            );
            Ok::<_, anyhow::Error>(Packages { dir, files })
        })
        .await
}

/// A two-step template in `namespace`: compose a greeting, then shout it.
fn template(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: greet\nversion: 1.0.0\n\
         context_schema: {{ type: object, required: [name], properties: {{ name: {{ type: string }} }} }}\n\
         steps:\n  - name: compose\n    handler: compose_greeting\n\
         \x20 - name: shout\n    handler: shout\n    depends_on: [compose]\n"
    )
}

/// A fresh folder outside the repository, removed when the test passes.
fn install_dir(language: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "tasker-package-{language}-{}",
        uuid::Uuid::now_v7()
    ));
    anyhow::ensure!(
        !dir.starts_with(repo_root()),
        "{} is inside the repository",
        dir.display()
    );
    std::fs::create_dir_all(dir.join("templates"))?;
    Ok(dir)
}

fn write(dir: &Path, files: &[(&str, &str)]) -> anyhow::Result<()> {
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// Native files of ours under `dir` (a shared library or Node addon with `tasker` in its path
/// within `dir`): none where only a client package is installed.
fn native_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                folders.push(path);
                continue;
            }
            let inside = path.strip_prefix(dir)?.to_string_lossy().to_lowercase();
            let native = [".so", ".node", ".pyd", ".dylib", ".bundle"]
                .iter()
                .any(|ext| inside.ends_with(ext))
                || inside.contains(".so.");
            if native && inside.contains("tasker") {
                found.push(path);
            }
        }
    }
    Ok(found)
}

/// `program` in `dir`, with nothing that would find the repository's copies of the packages.
fn command(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    for var in [
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "NODE_PATH",
        "RUBYLIB",
        "RUBYOPT",
        "GEM_HOME",
        "GEM_PATH",
        "BUNDLE_GEMFILE",
    ] {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir).env("NO_COLOR", "1").kill_on_drop(true);
    cmd
}

/// Runs `cmd` to completion (at most 5 minutes) and returns its stdout; fails with its output
/// when it fails.
async fn run(cmd: &mut Command, what: &str) -> anyhow::Result<String> {
    let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
        .await
        .with_context(|| format!("`{what}` took over 5 minutes"))?
        .with_context(|| format!("starting `{what}`"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "`{what}` failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
}

/// Against a fresh orchestrator that knows no template: `worker` (in `dir`, with
/// `templates/greet.yaml` in namespace `pkg_<language>`) registers it and runs its steps,
/// `client` submits a task and prints `{"id", "state", "result", "package"}` as its last line.
/// The task must complete with the shouted greeting, and the client's package must be the one
/// installed in `dir`.
async fn worker_and_client(
    language: &str,
    dir: &Path,
    mut worker: Command,
    mut client: Command,
) -> anyhow::Result<()> {
    let namespace = format!("pkg_{language}");
    std::fs::write(dir.join("templates/greet.yaml"), template(&namespace))?;
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    let cfg = &env.config;
    worker
        .args(["--templates", "templates", "--health-port", "0"])
        .arg("--orchestrator-url")
        .arg(o.url())
        .env("DATABASE_URL", &cfg.database_url)
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix);
    let mut worker =
        tasker::start_until_ready(&mut worker, &format!("the {language} worker")).await?;
    let registered = o.client.template(&namespace, "greet", None).await?;
    let by = registered.registered_by.unwrap_or_default();
    assert!(by.starts_with(&format!("worker:{language}:")), "{by}");

    let stdout = run(
        client.env("TASKER_URL", o.url()),
        &format!("the {language} client"),
    )
    .await?;
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .with_context(|| format!("the {language} client printed: {stdout}"))?;
    let greeting = json!({"shout": {"greeting": "HELLO, ADA!"}});
    assert_eq!(report["state"], "complete", "{report}");
    assert_eq!(report["result"], greeting, "{report}");
    let package = report["package"].as_str().unwrap_or_default();
    assert!(
        Path::new(package).starts_with(dir),
        "the client loaded {package}, not the package installed in {}",
        dir.display()
    );
    let id = report["id"].as_str().context("no task id")?.parse()?;
    let task = o.client.task(id, None).await?;
    assert_eq!(task.namespace, namespace);
    assert_eq!(task.result, Some(greeting));

    worker.kill().await?;
    o.stop().await;
    env.cleanup().await?;
    std::fs::remove_dir_all(dir)?;
    Ok(())
}

/// Against a fresh orchestrator with the Rust fixture templates and a Rust worker serving them:
/// `client` (a program of the client-only package installed in `dir`) submits
/// `rust_examples/linear` with `{"value": 6}`, waits, and prints `{"id", "state", "result",
/// "package", "native"}` as its last line, `native` being the native code of ours it finds loaded.
/// The task must complete with 242, the package must be the one in `dir`, nothing native of ours
/// loaded, and no native file of ours in `dir` at all.
async fn client_alone(language: &str, dir: &Path, mut client: Command) -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let stdout = run(
        client.env("TASKER_URL", o.url()),
        &format!("the {language} client-only program"),
    )
    .await?;
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .with_context(|| format!("the {language} client printed: {stdout}"))?;
    assert_eq!(report["state"], "complete", "{report}");
    assert_eq!(
        report["result"],
        json!({"halve": {"value": 242}}),
        "{report}"
    );
    assert_eq!(
        report["native"],
        json!([]),
        "native code was loaded: {report}"
    );
    let package = report["package"].as_str().unwrap_or_default();
    assert!(
        Path::new(package).starts_with(dir),
        "the client loaded {package}, not the package installed in {}",
        dir.display()
    );
    let native = native_files(dir)?;
    assert!(native.is_empty(), "native files of ours: {native:?}");
    let id = report["id"].as_str().context("no task id")?.parse()?;
    let task = o.client.task(id, None).await?;
    assert_eq!(
        (task.namespace.as_str(), task.name.as_str()),
        ("rust_examples", "linear")
    );

    worker.stop().await;
    o.stop().await;
    env.cleanup().await?;
    std::fs::remove_dir_all(dir)?;
    Ok(())
}
