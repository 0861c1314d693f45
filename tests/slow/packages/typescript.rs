//! The TypeScript packages: the worker tarball and the client-only tarball, each installed with
//! npm into an empty project and compiled against its types.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use tasker::repo_root;

use super::{client_alone, command, install_dir, packages, run, worker_and_client, write};

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
