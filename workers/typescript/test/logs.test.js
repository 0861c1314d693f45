"use strict";
// TASKER_LOG_FORMAT=json: every line the worker writes to stderr is one JSON object, the core's
// records and the library's own alike, as the Rust binaries write them (tests/fast/logs.rs); a
// logger passed to Worker.start keeps its own format.
const test = require("node:test");
const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const { jsonLogger } = require("../dist/index.js");
const { defaultLogger, handOver } = require("../dist/logs.js");
const { repoRoot, waitForLine } = require("./support/orchestrator.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
const bin = path.join(__dirname, "../dist/bin/tasker-worker-node.js");
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3,6}Z$/;

/** Each line parsed, with the fields every line has checked. */
function jsonLines(text) {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      let record;
      assert.doesNotThrow(() => (record = JSON.parse(line)), `not a JSON line: ${line}`);
      assert.equal(typeof record, "object", line);
      assert.match(record.timestamp, TIMESTAMP, line);
      assert.ok(["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].includes(record.level), line);
      assert.ok(typeof record.target === "string" && record.target !== "", line);
      assert.equal(typeof record.message, "string", line);
      return record;
    });
}

async function deleteQueues(prefix) {
  const amqp = require("amqplib");
  const conn = await amqp.connect(process.env.AMQP_URL);
  const channel = await conn.createChannel();
  const steps = `${prefix}.steps.typescript_examples`;
  for (const queue of [`${prefix}.results`, `${prefix}.dead`, steps, `${steps}@high`, `${steps}@low`]) {
    await channel.deleteQueue(queue);
  }
  await conn.close();
}

test("tasker-worker-node writes JSON lines with TASKER_LOG_FORMAT=json", async () => {
  assert.ok(process.env.AMQP_URL, 'AMQP_URL is not set: eval "$(cargo-make/services.sh env)" (test.sh does)');
  const prefix = `test_ts_logs_${randomUUID().slice(-12)}`;
  const env = {
    ...process.env,
    TASKER_LOG_FORMAT: "json",
    TASKER_QUEUE_PREFIX: prefix,
    TASKER_WORKER__REGISTER_TEMPLATES: "false",
    RUST_LOG: "info",
    NO_COLOR: "1",
  };
  const handlers = path.join(__dirname, "../dist/fixtures/handlers.js");
  const child = spawn(process.execPath, [bin, "--templates", templates, "--health-port", "0", "--handlers", handlers], {
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exit = new Promise((resolve) => child.once("exit", resolve));
  try {
    await waitForLine(child.stdout, "tasker worker ready", 10_000);
    const deadline = Date.now() + 20_000;
    while (!stderr.includes("worker consuming") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(stderr, /worker consuming/, "no 'worker consuming' line within 20 s");
    child.kill("SIGTERM");
    assert.equal(await exit, 0, stderr);
  } finally {
    child.kill("SIGKILL");
    await deleteQueues(prefix);
  }
  const records = jsonLines(stderr);
  // The core's records name their Rust module; the library's own lines `tasker`.
  const consuming = records.find((r) => r.message.startsWith("worker consuming"));
  assert.deepEqual([consuming.level, consuming.target], ["INFO", "tasker_worker::worker"]);
  assert.ok(records.some((r) => r.target === "tasker" && r.message === "SIGTERM: finishing running steps, then stopping"));
  const last = records.at(-1);
  assert.deepEqual([last.level, last.target, last.message], ["INFO", "tasker", "stopped"]);
});

test("the default logger is JSON lines with TASKER_LOG_FORMAT=json, else console", () => {
  const saved = process.env.TASKER_LOG_FORMAT;
  try {
    process.env.TASKER_LOG_FORMAT = "JSON";
    assert.equal(typeof defaultLogger().record, "function");
    delete process.env.TASKER_LOG_FORMAT;
    assert.equal(defaultLogger(), console);
  } finally {
    if (saved === undefined) delete process.env.TASKER_LOG_FORMAT;
    else process.env.TASKER_LOG_FORMAT = saved;
  }
});

test("a core record's fields: at the top level of a JSON line, ` key=value` in a text one", () => {
  const record = { level: "TRACE", target: "tasker_worker::worker", message: "took", fields: { count: 3, queue: "q.steps" } };
  const lines = [];
  handOver(jsonLogger("tasker", (line) => lines.push(line)), record);
  const [line] = jsonLines(lines.join(""));
  assert.deepEqual(
    [line.level, line.target, line.message, line.count, line.queue],
    ["TRACE", "tasker_worker::worker", "took", 3, "q.steps"],
  );
  const text = [];
  const logger = { error: () => {}, warn: () => {}, info: () => {}, debug: (l) => text.push(l) };
  handOver(logger, record);
  assert.deepEqual(text, ["tasker_worker::worker: took count=3 queue=q.steps"]);
});
