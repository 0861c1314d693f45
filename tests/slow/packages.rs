//! Each language's package as people install it. `workers/<lang>/package.sh` builds the artefact
//! (a wheel, an npm tarball, a platform gem); it is installed into a fresh folder outside the
//! repository (a venv, an empty npm project, a gem folder of its own) and used from there only:
//! the package's worker command runs a handler file of the test's own for a two-step template
//! in a namespace no orchestrator has seen (the worker registers it), and a client program in
//! the same language submits a task and waits for it, against a real orchestrator. The Python
//! files are type-checked against the installed wheel (mypy --strict, and mypy's stubtest
//! compares the native module's stub with the module); the TypeScript ones are written as an ES
//! module (the handlers) and a CommonJS one (the client), compiled with the package's types in
//! node16 and nodenext modes, and run as compiled.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tasker::{TestEnv, repo_root, target_dir};
use tokio::process::Command;

/// One package build at a time: they share cargo's target folder and two cores.
static BUILD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The type checker the Python test installs beside the wheel (from PyPI).
const MYPY: &str = "mypy==2.4.1";

/// A two-step template in `namespace`: compose a greeting, then shout it.
fn template(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: greet\nversion: 1.0.0\n\
         context_schema: {{ type: object, required: [name], properties: {{ name: {{ type: string }} }} }}\n\
         steps:\n  - name: compose\n    handler: compose_greeting\n\
         \x20 - name: shout\n    handler: shout\n    depends_on: [compose]\n"
    )
}

/// Builds `language`'s package with its `package.sh` and returns the artefact's path.
async fn package(language: &str) -> anyhow::Result<PathBuf> {
    let _one_at_a_time = BUILD.lock().await;
    let script = repo_root()
        .join("workers")
        .join(language)
        .join("package.sh");
    let out = tokio::time::timeout(
        Duration::from_secs(1200),
        Command::new(&script)
            .arg(target_dir().join("packages"))
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("{} took over 20 minutes", script.display()))??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(out.status.success(), "{}: {}", script.display(), out.status);
    let path = PathBuf::from(stdout.lines().last().unwrap_or_default());
    anyhow::ensure!(
        path.is_file(),
        "{} printed no artefact: {stdout}",
        script.display()
    );
    Ok(path)
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
    report = {"id": done.id, "state": done.state, "result": done.result, "package": tasker.__file__}
    print(json.dumps(report))
    return 0 if done.state == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
"#;

/// The wheel, installed with pip into a new venv.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_wheel() -> anyhow::Result<()> {
    let wheel = package("python").await?;
    let dir = install_dir("python")?;
    run(
        command("python3", &dir).args(["-m", "venv", "venv"]),
        "python3 -m venv venv",
    )
    .await?;
    let bin = dir.join("venv/bin");
    run(
        command(bin.join("python"), &dir)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .arg(MYPY),
        "pip install",
    )
    .await?;
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

const TS_HANDLERS: &str = r#"// The packaged worker's handlers, an ES module: `import` of the package.
import { Handler, registerHandler, type StepContext } from "tasker-worker";

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
import { ApiError, Client, isTerminal } from "tasker-worker";

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
  const report = { id: done.id, state: done.state, result: done.result, package: require.resolve("tasker-worker") };
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

/// The tarball, installed with npm into an empty project, with TypeScript to compile against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_tarball() -> anyhow::Result<()> {
    let tarball = package("typescript").await?;
    let dir = install_dir("typescript")?;
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
        &dir,
        &[
            ("package.json", r#"{ "name": "consumer", "private": true }"#),
            ("handlers.mts", TS_HANDLERS),
            ("client.cts", TS_CLIENT),
            ("tsconfig.json", TS_CONFIG),
        ],
    )?;
    run(
        command("npm", &dir)
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefer-offline",
            ])
            .arg(&tarball)
            .arg(dependency("typescript")?)
            .arg(dependency("@types/node")?),
        "npm install",
    )
    .await?;
    let tsc = dir.join("node_modules/.bin/tsc");
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
                   "package" => Gem.loaded_specs.fetch("tasker").full_gem_path)
exit(task.state == "complete" ? 0 : 1)
"#;

/// The platform gem, installed with `gem install --local` into a gem folder of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_gem() -> anyhow::Result<()> {
    let gem = package("ruby").await?;
    let dir = install_dir("ruby")?;
    let gems = dir.join("gems");
    let with_gems = |program: &Path| {
        let mut cmd = command(program, &dir);
        cmd.env("GEM_HOME", &gems).env("GEM_PATH", &gems);
        cmd
    };
    run(
        with_gems(Path::new("gem"))
            .args(["install", "--local", "--no-document", "--install-dir"])
            .arg(&gems)
            .arg(&gem),
        "gem install",
    )
    .await?;
    write(
        &dir,
        &[("handlers.rb", RUBY_HANDLERS), ("client.rb", RUBY_CLIENT)],
    )?;
    let mut worker = with_gems(&gems.join("bin/tasker-worker-ruby"));
    worker.args(["--handlers", "handlers.rb"]);
    let mut client = with_gems(Path::new("ruby"));
    client.arg("client.rb");
    worker_and_client("ruby", &dir, worker, client).await
}
