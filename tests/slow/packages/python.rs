//! The Python packages: the worker wheel with the client wheel it depends on, and the client
//! wheel alone, each installed by name with pip into a new venv and type-checked with mypy.

use std::path::{Path, PathBuf};

use super::{client_alone, command, install_dir, packages, run, worker_and_client, write};

/// The type checker the Python tests install beside the wheels (from PyPI).
const MYPY: &str = "mypy==2.4.1";
/// The client's dependencies (workers/python/client/pyproject.toml: httpx, and attrs for its
/// generated wire types), installed from PyPI before Tasker's packages, which then come from the
/// packages folder alone (`--no-index`).
const HTTPX: &str = "httpx>=0.28,<1";
const ATTRS: &str = "attrs>=23.2";

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
