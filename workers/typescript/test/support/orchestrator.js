// A real orchestrator for end-to-end tests and the benchmark: target/debug/tasker-orchestrator
// against the running PostgreSQL and RabbitMQ (cargo-make/services.sh), isolated by a database
// and a queue prefix of its own.
"use strict";
const { spawn, execFileSync } = require("node:child_process");
const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");
const readline = require("node:readline");

const repoRoot = path.resolve(__dirname, "../../../..");

function orchestratorBinary() {
  const target = process.env.CARGO_TARGET_DIR || path.join(repoRoot, "target");
  const bin = path.join(target, "debug", "tasker-orchestrator");
  if (!fs.existsSync(bin)) {
    throw new Error(`${bin} is missing: cargo build -p tasker-orchestration (test.sh does)`);
  }
  return bin;
}

function serviceUrls() {
  const { DATABASE_URL, AMQP_URL } = process.env;
  if (!DATABASE_URL || !AMQP_URL) {
    throw new Error(
      'DATABASE_URL and AMQP_URL are not set: eval "$(cargo-make/services.sh env)" (test.sh does)',
    );
  }
  return { databaseUrl: DATABASE_URL, amqpUrl: AMQP_URL };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves with the first line of `stream` that contains `text`; rejects after `ms` or at EOF. */
function waitForLine(stream, text, ms) {
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: stream });
    const timer = setTimeout(() => done(new Error(`no line containing "${text}" within ${ms} ms`)), ms);
    function done(err, line) {
      clearTimeout(timer);
      lines.removeAllListeners("line");
      lines.removeAllListeners("close");
      // Keep draining so the child never blocks on a full pipe.
      stream.resume();
      if (err) reject(err);
      else resolve(line);
    }
    lines.on("line", (line) => line.includes(text) && done(undefined, line));
    lines.on("close", () => done(new Error(`stream ended before a line containing "${text}"`)));
  });
}

/**
 * Starts one orchestrator process with `env` (its database, queue prefix, settings) on a free
 * port; https:// when `env` names a certificate. Resolves once it listens, with its base URL and
 * `stop()`.
 */
async function spawnOrchestrator(env, args) {
  const port = await freePort();
  const scheme = env.TASKER_ORCHESTRATOR__TLS_CERT_FILE ? "https" : "http";
  const child = spawn(orchestratorBinary(), ["--bind", `127.0.0.1:${port}`, ...args], {
    // Tokens are required by default; the tests of tokens turn them on again in `env`.
    env: {
      ...process.env,
      TASKER_ORCHESTRATOR__AUTH: "off",
      ...env,
      NO_COLOR: "1",
      RUST_LOG: "warn,tasker_orchestrator=info",
    },
    // Logs go to stderr (stdout is left for a program's own output).
    stdio: ["ignore", "inherit", "pipe"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  async function stop() {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
    }
    await exited;
  }
  try {
    await waitForLine(child.stderr, "tasker-orchestrator listening", 30_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl: `${scheme}://127.0.0.1:${port}`, port, stop };
}

/**
 * Starts an orchestrator for `templates`. Returns its base URL, the environment a worker needs
 * (DATABASE_URL, AMQP_URL, TASKER_QUEUE_PREFIX), `peer()` and `stop()`, which also stops the
 * peers, drops the database and deletes the queues of `namespaces`.
 */
async function startOrchestrator({ templates, namespaces }) {
  const { databaseUrl, amqpUrl } = serviceUrls();
  const id = randomUUID().replaceAll("-", "").slice(-12);
  const database = `tasker_test_ts_${id}`;
  execFileSync("psql", [databaseUrl, "-qc", `CREATE DATABASE ${database}`]);
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  const cluster = {
    DATABASE_URL: url.toString(),
    AMQP_URL: amqpUrl,
    TASKER_QUEUE_PREFIX: `test_ts_${id}`,
  };
  const peers = [];
  async function stop() {
    await Promise.all([...peers, main].map((o) => o?.stop()));
    execFileSync("psql", [databaseUrl, "-qc", `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`]);
    const amqp = require("amqplib");
    const conn = await amqp.connect(amqpUrl);
    const channel = await conn.createChannel();
    const prefix = cluster.TASKER_QUEUE_PREFIX;
    for (const queue of [`${prefix}.results`, `${prefix}.dead`, ...namespaces.map((ns) => `${prefix}.steps.${ns}`)]) {
      await channel.deleteQueue(queue);
    }
    await conn.close();
  }
  let main;
  try {
    main = await spawnOrchestrator(cluster, ["--templates", templates]);
  } catch (err) {
    await stop();
    throw err;
  }
  /**
   * Another orchestrator of the same cluster (database and queues) with `settings` of its own
   * (TASKER_ORCHESTRATOR__* variables: a lower wait cap, TLS, tokens required). It learns the
   * templates from the database. Stopped by `stop()`.
   */
  async function peer(settings = {}) {
    const o = await spawnOrchestrator({ ...cluster, ...settings }, []);
    peers.push(o);
    return o;
  }
  /** Creates an API token with `scope` in the cluster's database and returns it. */
  function createToken(name, scope) {
    return execFileSync(orchestratorBinary(), ["token", "create", name, "--scope", scope], {
      env: { ...process.env, ...cluster, NO_COLOR: "1", RUST_LOG: "warn" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  }
  // A worker started with this environment registers its templates with this orchestrator.
  const env = {
    ...cluster,
    TASKER_WORKER__ORCHESTRATOR_URL: main.baseUrl,
    TASKER_WORKER__REGISTER_TEMPLATES: "true",
  };
  return { baseUrl: main.baseUrl, env, peer, createToken, stop };
}

async function request(method, url, body) {
  const res = await fetch(url, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) {
    throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  }
  return json;
}

/** Creates a task and waits (server side, on its completion notification) until it is terminal. */
async function runTask(baseUrl, namespace, name, context) {
  const task = await request("POST", `${baseUrl}/v1/tasks`, { namespace, name, context });
  return request("GET", `${baseUrl}/v1/tasks/${task.id}?wait=60`);
}

module.exports = { repoRoot, startOrchestrator, runTask, request, waitForLine, freePort };
