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

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tasker::{TestEnv, repo_root, target_dir};
use tokio::process::Command;

/// The type checker the Python tests install beside the wheels (from PyPI).
const MYPY: &str = "mypy==2.4.1";
/// The client's dependencies (workers/python/client/pyproject.toml: httpx, and attrs for its
/// generated wire types), installed from PyPI before Tasker's packages, which then come from the
/// packages folder alone (`--no-index`).
const HTTPX: &str = "httpx>=0.28,<1";
const ATTRS: &str = "attrs>=23.2";

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

const PYTHON_HANDLERS: &str = r#""""The packaged worker's handlers, typed: mypy --strict checks them against the wheel."""

import tasker
from tasker._native import NativeWorker


@tasker.handler("compose_greeting")
def compose(ctx: tasker.StepContext) -> dict[str, str]:
    return {"greeting": f"Hello, {ctx.context['name']}"}


class Shout(tasker.Handler):
    name = "shout"

    def call(self, ctx: tasker.StepContext) -> dict[str, str]:
        greeting: str = ctx.parent_results["compose"]["greeting"]
        return {"greeting": greeting.upper() + "!"}


def describe(worker: NativeWorker) -> str:
    """Only type-checked: typed by the native module's stub, tasker/_native.pyi."""
    return f"{worker.health_addr} {','.join(worker.namespaces)} {worker.shutdown_timeout:.0f}"


def serve(templates: str) -> bool:
    """Only type-checked: the three calls of tasker.Worker."""
    worker = tasker.Worker.start(templates, concurrency=4, shutdown_timeout=2.5)
    worker.stop()
    return worker.run()
"#;

const PYTHON_CLIENT: &str = r#""""Submits a greet task with tasker.Client, waits, prints the outcome as JSON."""

import json
import sys

import tasker


def main() -> int:
    with tasker.Client() as client:  # TASKER_URL
        task = client.create_task("pkg_python", "greet", {"name": "Ada"})
        done: tasker.Task = client.wait(task.id, timeout=60)
    report = {"id": str(done.id), "state": done.state, "result": done.result, "package": tasker.__file__}
    print(json.dumps(report))
    return 0 if done.state == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
"#;

/// A new venv for `dir` with mypy and httpx from PyPI, then Tasker's package `name` from the
/// packages folder alone (its client dependency found there by name too); returns the venv's
/// `bin`.
async fn venv_with(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let packages = packages().await?;
    packages.file(name, ".whl")?;
    run(
        command("python3", dir).args(["-m", "venv", "venv"]),
        "python3 -m venv venv",
    )
    .await?;
    let bin = dir.join("venv/bin");
    let pip = |args: &[&str]| {
        let mut cmd = command(bin.join("python"), dir);
        cmd.args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(args);
        cmd
    };
    run(
        &mut pip(&[MYPY, HTTPX, ATTRS]),
        "pip install mypy httpx attrs",
    )
    .await?;
    let mut ours = pip(&["--no-index", "--find-links"]);
    ours.arg(&packages.dir).arg(name);
    run(&mut ours, &format!("pip install {name}")).await?;
    Ok(bin)
}

/// The worker wheel and the client wheel it depends on, installed by name with pip into a new
/// venv.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_wheel() -> anyhow::Result<()> {
    let dir = install_dir("python")?;
    let bin = venv_with(&dir, "tasker-workflows").await?;
    write(
        &dir,
        &[
            ("handlers.py", PYTHON_HANDLERS),
            ("client.py", PYTHON_CLIENT),
        ],
    )?;
    // Types: py.typed and tasker/_native.pyi came with the wheel (without them mypy refuses the
    // imports), and the stub says what the compiled module has.
    run(
        command(bin.join("python"), &dir).args([
            "-m",
            "mypy",
            "--strict",
            "handlers.py",
            "client.py",
        ]),
        "mypy --strict",
    )
    .await?;
    run(
        command(bin.join("python"), &dir).args(["-m", "mypy.stubtest", "tasker._native"]),
        "stubtest tasker._native",
    )
    .await?;
    let mut worker = command(bin.join("tasker-worker-python"), &dir);
    worker.args(["--handlers", "handlers.py"]);
    let mut client = command(bin.join("python"), &dir);
    client.arg("client.py");
    worker_and_client("python", &dir, worker, client).await
}

const PYTHON_CLIENT_ALONE: &str = r#""""Submits rust_examples/linear with the client-only package, waits, reports what it loaded."""

import json
import sys

import tasker.client


def native_loaded() -> list[str]:
    """Native code of ours in this process: the worker's module, or a shared object from a tasker
    folder of this environment."""
    modules = [name for name in sys.modules if name.startswith("tasker._native")]
    with open("/proc/self/maps") as maps:
        mapped = {line.split()[-1] for line in maps if line.rstrip().endswith(".so") or ".so." in line}
    ours = [p for p in mapped if p.startswith(sys.prefix) and "tasker" in p.removeprefix(sys.prefix)]
    return sorted(modules + ours)


def main() -> int:
    with tasker.client.Client() as client:  # TASKER_URL
        task = client.create_task("rust_examples", "linear", {"value": 6})
        done: tasker.client.Task = client.wait(task.id, timeout=60)
    report = {
        "id": str(done.id),
        "state": done.state,
        "result": done.result,
        "package": tasker.client.__file__,
        "native": native_loaded(),
    }
    print(json.dumps(report))
    return 0 if done.state == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
"#;

/// The client-only wheel, installed by name with pip into a new venv: typed (mypy --strict
/// against its py.typed, `tasker` a namespace package), and no native code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_wheel() -> anyhow::Result<()> {
    let dir = install_dir("python-client")?;
    let bin = venv_with(&dir, "tasker-workflows-client").await?;
    write(&dir, &[("client.py", PYTHON_CLIENT_ALONE)])?;
    run(
        command(bin.join("python"), &dir).args(["-m", "mypy", "--strict", "client.py"]),
        "mypy --strict",
    )
    .await?;
    let mut client = command(bin.join("python"), &dir);
    client.arg("client.py");
    client_alone("python", &dir, client).await
}

const TS_HANDLERS: &str = r#"// The packaged worker's handlers, an ES module: `import` of the package.
import { Handler, registerHandler, type StepContext } from "tasker-workflows";

registerHandler("compose_greeting", (ctx: StepContext) => ({ greeting: `Hello, ${String(ctx.context.name)}` }));

class Shout extends Handler {
  static override handlerName = "shout";
  async call(ctx: StepContext): Promise<{ greeting: string }> {
    const { compose } = (await ctx.parentResults.all()) as { compose: { greeting: string } };
    return { greeting: compose.greeting.toUpperCase() + "!" };
  }
}
registerHandler(Shout);
"#;

const TS_CLIENT: &str = r#"// Submits a greet task with Client and waits, a CommonJS module: `require` of the package.
import { ApiError, Client, isTerminal } from "tasker-workflows";

interface Greet {
  name: string;
}
interface Greeted {
  shout: { greeting: string };
}

async function main(): Promise<number> {
  const client = new Client(); // TASKER_URL
  const task = await client.createTask<Greet, Greeted>("pkg_typescript", "greet", { name: "Ada" });
  const done = await client.wait(task, 60_000);
  const greeting: string | undefined = done.result?.shout.greeting;
  if (!isTerminal(done) || greeting === undefined) {
    console.error(`task ${done.id} is ${done.state}`);
  }
  const report = { id: done.id, state: done.state, result: done.result, package: require.resolve("tasker-workflows") };
  console.log(JSON.stringify(report));
  return done.state === "complete" ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    console.error(err instanceof ApiError ? `${err.status} ${err.code}: ${err.message}` : err);
    process.exitCode = 1;
  },
);
"#;

const TS_CONFIG: &str = r#"{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "strict": true,
    "types": ["node"],
    "outDir": "."
  },
  "files": ["handlers.mts", "client.cts"]
}
"#;

/// An npm project in `dir` with `files` and the tarball of Tasker's package `name` (from the
/// packages folder), with TypeScript to compile against it; returns the project's `tsc`.
async fn npm_project(dir: &Path, name: &str, files: &[(&str, &str)]) -> anyhow::Result<PathBuf> {
    let tarball = packages().await?.file(name, ".tgz")?;
    // The compiler and Node's types at the versions the package is developed with.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(
        repo_root().join("workers/typescript/package.json"),
    )?)?;
    let dev = &manifest["devDependencies"];
    let dependency = |name: &str| -> anyhow::Result<String> {
        let range = dev[name].as_str().with_context(|| format!("no {name}"))?;
        Ok(format!("{name}@{range}"))
    };
    write(
        dir,
        &[("package.json", r#"{ "name": "consumer", "private": true }"#)],
    )?;
    write(dir, files)?;
    run(
        command("npm", dir)
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefer-offline",
            ])
            .arg(tarball)
            .arg(dependency("typescript")?)
            .arg(dependency("@types/node")?),
        "npm install",
    )
    .await?;
    Ok(dir.join("node_modules/.bin/tsc"))
}

/// The worker tarball, installed with npm into an empty project, with TypeScript to compile
/// against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_tarball() -> anyhow::Result<()> {
    let dir = install_dir("typescript")?;
    let tsc = npm_project(
        &dir,
        "tasker-workflows",
        &[
            ("handlers.mts", TS_HANDLERS),
            ("client.cts", TS_CLIENT),
            ("tsconfig.json", TS_CONFIG),
        ],
    )
    .await?;
    // An .mts file resolves the package's `import` condition, a .cts file its `require` one.
    run(
        command(&tsc, &dir).args(["-p", ".", "--noEmit"]).args([
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
        ]),
        "tsc (nodenext)",
    )
    .await?;
    run(command(&tsc, &dir).args(["-p", "."]), "tsc (node16)").await?;
    let mut worker = command(dir.join("node_modules/.bin/tasker-worker-node"), &dir);
    worker.args(["--handlers", "./handlers.mjs"]);
    let mut client = command("node", &dir);
    client.arg("client.cjs");
    worker_and_client("typescript", &dir, worker, client).await
}

const TS_CLIENT_ALONE: &str = r#"// Submits rust_examples/linear with the client-only package and waits, an ES module: `import`
// of the package. Reports what it loaded.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "tasker-workflows-client";

interface Linear {
  value: number;
}
interface Halved {
  halve: { value: number };
}

const client = new Client(); // TASKER_URL
const task = await client.createTask<Linear, Halved>("rust_examples", "linear", { value: 6 });
const done = await client.wait(task, 60_000);
// Node addons (.node files) mapped into this process: none for a client without native code.
const mapped = readFileSync("/proc/self/maps", "utf8")
  .split("\n")
  .map((line) => line.trim().split(/\s+/).at(-1) ?? "")
  .filter((path) => path.endsWith(".node"));
const report = {
  id: done.id,
  state: done.state,
  result: done.result,
  package: fileURLToPath(import.meta.resolve("tasker-workflows-client")),
  native: [...new Set(mapped)],
};
console.log(JSON.stringify(report));
process.exitCode = done.state === "complete" ? 0 : 1;
"#;

const TS_CLIENT_ALONE_CONFIG: &str = r#"{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "strict": true,
    "types": ["node"],
    "outDir": "."
  },
  "files": ["client.mts"]
}
"#;

/// The client-only tarball, installed with npm into an empty project: compiled against its types
/// as an ES module, and no `.node` file loaded or installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_tarball() -> anyhow::Result<()> {
    let dir = install_dir("typescript-client")?;
    let tsc = npm_project(
        &dir,
        "tasker-workflows-client",
        &[
            ("client.mts", TS_CLIENT_ALONE),
            ("tsconfig.json", TS_CLIENT_ALONE_CONFIG),
        ],
    )
    .await?;
    run(command(&tsc, &dir).args(["-p", "."]), "tsc").await?;
    let mut client = command("node", &dir);
    client.arg("client.mjs");
    client_alone("typescript", &dir, client).await
}

const RUBY_HANDLERS: &str = r#"# The packaged worker's handlers.
require "tasker"

Tasker.register("compose_greeting") { |ctx| { "greeting" => "Hello, #{ctx.context.fetch("name")}" } }

class Shout < Tasker::Handler
  handles "shout"

  def call(ctx)
    { "greeting" => ctx.parent_results.fetch("compose").fetch("greeting").upcase + "!" }
  end
end
"#;

const RUBY_CLIENT: &str = r#"# Submits a greet task with Tasker::Client, waits, prints the outcome as JSON.
require "json"
require "tasker/client"

client = Tasker::Client.new # TASKER_URL
task = client.create_task("pkg_ruby", "greet", { "name" => "Ada" })
task = client.wait(task.id, 60)
puts JSON.generate("id" => task.id, "state" => task.state, "result" => task.result,
                   "package" => Gem.loaded_specs.fetch("tasker-workflows-client").full_gem_path)
exit(task.state == "complete" ? 0 : 1)
"#;

const RUBY_CLIENT_ALONE: &str = r#"# Submits rust_examples/linear with the client-only gem, waits, reports what it loaded.
require "json"
require "tasker/client"

client = Tasker::Client.new # TASKER_URL
task = client.create_task("rust_examples", "linear", { "value" => 6 })
task = client.wait(task.id, 60)
# The worker's extension, required or mapped: neither for the client alone.
mapped = File.readlines("/proc/self/maps").map { |line| line.split.last.to_s }.grep(/tasker_rb/)
puts JSON.generate("id" => task.id, "state" => task.state, "result" => task.result,
                   "package" => Gem.loaded_specs.fetch("tasker-workflows-client").full_gem_path,
                   "native" => ($LOADED_FEATURES.grep(/tasker_rb/) + mapped).uniq)
exit(task.state == "complete" ? 0 : 1)
"#;

/// `gem install --local` into `dir/gems`, run in the packages folder, where RubyGems finds the
/// gems it installs by name (and a gem's dependencies). `gem` is a name or a path there.
async fn install_gem(dir: &Path, gem: &std::ffi::OsStr) -> anyhow::Result<PathBuf> {
    let gems = dir.join("gems");
    run(
        command("gem", &packages().await?.dir)
            .env("GEM_HOME", &gems)
            .env("GEM_PATH", &gems)
            .args(["install", "--local", "--no-document", "--install-dir"])
            .arg(&gems)
            .arg(gem),
        "gem install",
    )
    .await?;
    Ok(gems)
}

/// `program` in `dir` with the gems of `gems` only.
fn with_gems(program: &Path, dir: &Path, gems: &Path) -> Command {
    let mut cmd = command(program, dir);
    cmd.env("GEM_HOME", gems).env("GEM_PATH", gems);
    cmd
}

/// The platform gem, installed with `gem install --local` into a gem folder of its own, with the
/// client gem it depends on. By its file: RubyGems 3.3 (Ruby 3.1's) finds a platform gem by name
/// only on a server; the client gem it finds by name in the packages folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_gem() -> anyhow::Result<()> {
    let gem = packages().await?.file("tasker-workflows", ".gem")?;
    let dir = install_dir("ruby")?;
    let gems = install_gem(&dir, gem.as_os_str()).await?;
    write(
        &dir,
        &[("handlers.rb", RUBY_HANDLERS), ("client.rb", RUBY_CLIENT)],
    )?;
    let mut worker = with_gems(&gems.join("bin/tasker-worker-ruby"), &dir, &gems);
    worker.args(["--handlers", "handlers.rb"]);
    let mut client = with_gems(Path::new("ruby"), &dir, &gems);
    client.arg("client.rb");
    worker_and_client("ruby", &dir, worker, client).await
}

/// The client-only gem, installed by name with `gem install --local` into a gem folder of its
/// own: pure Ruby, the extension neither installed nor loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_client_gem() -> anyhow::Result<()> {
    packages().await?.file("tasker-workflows-client", ".gem")?;
    let dir = install_dir("ruby-client")?;
    let gems = install_gem(&dir, "tasker-workflows-client".as_ref()).await?;
    write(&dir, &[("client.rb", RUBY_CLIENT_ALONE)])?;
    let mut client = with_gems(Path::new("ruby"), &dir, &gems);
    client.arg("client.rb");
    client_alone("ruby", &dir, client).await
}
