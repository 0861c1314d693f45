#!/usr/bin/env node
// Handler calls per second through a worker, broker included, orchestrator left out:
//
//   node workers/typescript/bench_calls.js [--steps 5000] [--worker typescript|rust] [--concurrency 64]
//
// Publishes --steps step messages (handler `double`, a trivial one in every language) straight to
// the worker's queue on RabbitMQ, and times from the first publish until the last result is on
// the results queue: consume, hand-off in batches to the language, handler, publish with
// confirm, ack. A warm-up round (500 steps) runs first. Needs the services
// (eval "$(cargo-make/services.sh env)") and a build (build.sh; for --worker rust, cargo build).
"use strict";
const { spawn } = require("node:child_process");
const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");

const amqp = require("amqplib");
const { repoRoot, waitForLine } = require("./test/support/orchestrator.js");

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "5000" },
    worker: { type: "string", default: "typescript" },
    concurrency: { type: "string", default: "64" },
  },
});
const steps = Number(values.steps);
const language = values.worker;

function workerCommand() {
  const templates = path.join(repoRoot, "tests/fixtures/task_templates", language);
  const args = ["--templates", templates, "--health-port", "0", "--concurrency", values.concurrency];
  if (language === "typescript") {
    return [path.join(__dirname, "conformance-worker"), args];
  }
  const target = process.env.CARGO_TARGET_DIR || path.join(repoRoot, "target");
  const bin = ["release", "debug"].map((p) => path.join(target, p, "tasker-worker-rust")).find(fs.existsSync);
  if (!bin) throw new Error("build tasker-worker-rust first (cargo build --release -p tasker-worker-rust)");
  return [bin, args];
}

async function main() {
  const amqpUrl = process.env.AMQP_URL;
  if (!amqpUrl) throw new Error('AMQP_URL is not set: eval "$(cargo-make/services.sh env)"');
  const prefix = `bench_${randomUUID().replaceAll("-", "").slice(-12)}`;
  const namespace = `${language}_examples`;
  const stepsQueue = `${prefix}.steps.${namespace}`;
  const resultsQueue = `${prefix}.results`;
  const deadQueue = `${prefix}.dead`;

  const conn = await amqp.connect(amqpUrl);
  const channel = await conn.createConfirmChannel();
  // The same declarations as the core's (idempotent), so nothing is published before the
  // worker has connected.
  const deadLetter = { "x-dead-letter-exchange": "", "x-dead-letter-routing-key": deadQueue };
  await channel.assertQueue(deadQueue, { durable: true });
  await channel.assertQueue(resultsQueue, { durable: true, arguments: deadLetter });
  await channel.assertQueue(stepsQueue, { durable: true, arguments: deadLetter });

  const [cmd, args] = workerCommand();
  const worker = spawn(cmd, args, {
    env: { ...process.env, TASKER_QUEUE_PREFIX: prefix, RUST_LOG: "warn", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await waitForLine(worker.stdout, "tasker worker ready", 30_000);

  let failures = 0;
  let onResult = () => {};
  await channel.consume(
    resultsQueue,
    (msg) => {
      if (msg === null) return; // the queue was deleted at the end
      // A result message carries a JSON array of results (one or many).
      for (const result of JSON.parse(msg.content.toString())) {
        if (result.outcome.status !== "success") failures += 1;
        onResult();
      }
    },
    { noAck: true },
  );

  async function round(n) {
    let left = n;
    const done = new Promise((resolve) => {
      onResult = () => --left === 0 && resolve();
    });
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      const message = {
        task_id: randomUUID(),
        step_id: randomUUID(),
        namespace,
        task_name: "bench",
        step_name: "s",
        handler: "double",
        attempt: 1,
        max_attempts: 1,
        context: { value: i },
        parent_results: {},
        dispatched_at: new Date().toISOString(),
        timeout_ms: 30_000,
      };
      channel.sendToQueue(stepsQueue, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        contentType: "application/json",
      });
    }
    await channel.waitForConfirms();
    await done;
    return (performance.now() - start) / 1000;
  }

  await round(500);
  const seconds = await round(steps);
  console.log(
    `${language} worker: ${steps} handler calls in ${seconds.toFixed(2)} s = ${Math.round(steps / seconds)} calls/s ` +
      `(concurrency ${values.concurrency}, broker round trip included${failures ? `, ${failures} FAILED` : ""})`,
  );

  worker.kill("SIGTERM");
  await new Promise((resolve) => worker.once("exit", resolve));
  for (const q of [stepsQueue, resultsQueue, deadQueue]) await channel.deleteQueue(q);
  await conn.close();
  if (failures) process.exitCode = 1;
}

main().catch((err) => {
  console.error(`bench_calls: ${err.message}`);
  process.exit(1);
});
