"use strict";
// Through the real native binding: starting and stopping the core, waiting for steps, errors.
// Starting needs no broker (the core connects in the background), so these run anywhere.
const test = require("node:test");
const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const { Worker, Registry } = require("../dist/index.js");
const { NativeWorker } = require("../index.js");
const { repoRoot, waitForLine } = require("./support/orchestrator.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
const bin = path.join(__dirname, "../dist/bin/tasker-worker-node.js");

test("index.js and index.d.ts carry every export of the native library", () => {
  // build.sh builds the library with cargo and keeps the committed loader and types; after a
  // change to what src/lib.rs exports, `npm run build:native` regenerates both (commit them).
  const file = Object.keys(require.cache).find((f) => f.endsWith(".node"));
  assert.ok(file, "index.js loaded a native library");
  const native = require(file);
  const loader = fs.readFileSync(path.join(__dirname, "../index.js"), "utf8");
  const types = fs.readFileSync(path.join(__dirname, "../index.d.ts"), "utf8");
  const names = Object.keys(native).filter((k) => !k.startsWith("__napi"));
  assert.ok(names.includes("NativeWorker"), `the library exports ${names}`);
  const hint = "regenerate them: npm run build:native in workers/typescript";
  for (const name of names) {
    assert.ok(loader.includes(`module.exports.${name} = nativeBinding.${name}`),
      `index.js does not re-export ${name}; ${hint}`);
    assert.match(types, new RegExp(`export declare (class|function|const) ${name}\\b`),
      `index.d.ts does not declare ${name}; ${hint}`);
    const body = types.split(`export declare class ${name} {`)[1]?.split("\n}\n")[0];
    if (body === undefined) continue; // a function or a constant
    const members = [
      ...Object.getOwnPropertyNames(native[name].prototype).filter((m) => m !== "constructor"),
      ...Object.getOwnPropertyNames(native[name])
        .filter((m) => !["length", "name", "prototype", "arguments", "caller"].includes(m)),
    ];
    for (const m of members) {
      assert.match(body, new RegExp(`^  (static |get )?${m}\\(`, "m"),
        `index.d.ts does not declare ${name}.${m}; ${hint}`);
    }
  }
});

/** `NativeWorker.start` with the protocol's start options. */
function startNative(options) {
  return NativeWorker.start(JSON.stringify({ templates, ...options }));
}

test("start reports health, namespaces and concurrency; takeSteps times out empty; stop releases a waiter", async () => {
  const native = startNative({ health_port: 0, concurrency: 3 });
  try {
    assert.match(native.healthAddr, /^127\.0\.0\.1:\d+$/);
    assert.deepEqual(native.namespaces, ["typescript_examples"]);
    assert.equal(native.concurrency, 3);
    const health = await (await fetch(`http://${native.healthAddr}/health`)).json();
    assert.equal(health.language, "typescript");

    const t0 = performance.now();
    assert.equal(await native.takeSteps(8, 0.05), "[]");
    assert.ok(performance.now() - t0 >= 45, "the wait lasts its timeout");

    const pending = native.takeSteps(8, 60);
    native.stop();
    assert.equal(await pending, "[]");
    assert.ok(native.stopped);
    native.stop(); // idempotent
  } finally {
    native.stop();
  }
});

test("malformed outcomes are refused with the reason", () => {
  const native = startNative({ health_port: 0 });
  try {
    assert.throws(() => native.complete("not json"), /invalid outcome JSON/);
    assert.throws(() => native.complete('[{"id": 1, "status": "maybe"}]'), /invalid outcome JSON/);
  } finally {
    native.stop();
  }
});

test("a bad templates folder or config gives a clear error", () => {
  assert.throws(() => Worker.start({ templates: "/nonexistent/templates" }), /\/nonexistent\/templates.*No such file/);
  assert.throws(
    () => Worker.start({ templates, configFile: "/nonexistent/tasker.toml" }),
    /tasker\.toml/,
  );
});

test("Worker.run returns once stop() is called", async () => {
  const worker = Worker.start({ templates, healthPort: 0, registry: new Registry(), poll: 0.05 });
  const running = worker.run();
  assert.equal(worker.run(), running);
  await worker.stop();
  await running;
  assert.equal(worker.inFlight, 0);
});

function runCli(args) {
  return spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
}

async function finished(child) {
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const code = await new Promise((resolve) => child.once("exit", resolve));
  return { code, stderr };
}

test("tasker-worker-node without --templates exits 2 with its usage", async () => {
  const { code, stderr } = await finished(runCli([]));
  assert.equal(code, 2);
  assert.match(stderr, /--templates DIR is required/);
  assert.match(stderr, /usage: tasker-worker-node/);
});

test("tasker-worker-node with a missing handlers file or templates folder exits 1 and says why", async () => {
  const a = await finished(runCli(["--templates", templates, "--handlers", "./no/such/handlers.js"]));
  assert.equal(a.code, 1);
  assert.match(a.stderr, /no\/such\/handlers\.js/);
  const b = await finished(runCli(["--templates", "/nonexistent/templates"]));
  assert.equal(b.code, 1);
  assert.match(b.stderr, /\/nonexistent\/templates/);
});

test("tasker-worker-node prints the ready line and stops cleanly on SIGTERM", async () => {
  const child = runCli(["--templates", templates, "--health-port", "0", "--handlers", path.join(__dirname, "../dist/fixtures/handlers.js")]);
  const exit = finished(child);
  const line = await waitForLine(child.stdout, "tasker worker ready", 10_000);
  assert.match(line, /^tasker worker ready: language=typescript health=127\.0\.0\.1:\d+ namespaces=typescript_examples$/);
  child.kill("SIGTERM");
  const { code, stderr } = await exit;
  assert.equal(code, 0, stderr);
  assert.match(stderr, /SIGTERM: finishing running steps, then stopping/);
  // A graceful stop ends with its own line and logs no error on the way.
  assert.match(stderr, /tasker-worker-node: stopped\n$/);
  assert.doesNotMatch(stderr, /ERROR|Connection error/);
});

test("the core's log records reach the worker's logger, each at its level", async () => {
  let resolve;
  const consuming = new Promise((r) => (resolve = r));
  const lines = [];
  const keep = (level) => (line) => {
    lines.push([level, line]);
    if (line.includes("worker consuming")) resolve([level, line]);
  };
  const logger = { error: keep("error"), warn: keep("warn"), info: keep("info"), debug: keep("debug") };
  const worker = Worker.start({ templates, healthPort: 0, registry: new Registry(), poll: 0.05, logger });
  const running = worker.run();
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no "worker consuming" record within 20 s: ${JSON.stringify(lines)}`)), 20_000);
    });
    const [level, line] = await Promise.race([consuming, timeout]);
    assert.equal(level, "info");
    assert.match(line, /^tasker_worker::worker: worker consuming namespaces=/);
  } finally {
    clearTimeout(timer);
    await worker.stop();
    await running;
  }
});
