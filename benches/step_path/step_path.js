"use strict";
// One step through the TypeScript worker's execute(), as `cargo bench --bench step_path` times it.
//
// argv: the job's JSON text (what the core hands out), then pauses in milliseconds. For each
// pause, prints `pause_ms p50_us p95_us`: from the job's JSON text to the outcome message handed
// to complete(), through execute() (parse, context, deadline, handler, encoded outcome),
// sampled after that pause (0: back to back).
const path = require("node:path");
const dist = path.join(__dirname, "../../workers/typescript/dist");
const { execute } = require(path.join(dist, "execute.js"));
const { outcomeJson } = require(path.join(dist, "outcome.js"));
const { defaultRegistry } = require(path.join(dist, "handler.js"));
require(path.join(dist, "fixtures/handlers.js"));

const raw = `[${process.argv[2]}]`;
const pauses = process.argv.slice(3).map(Number);
const registry = defaultRegistry();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  for (const pause of pauses) {
    const samples = [];
    for (let i = 0; i < (pause === 0 ? 2000 : 100); i++) {
      if (pause) await sleep(pause);
      const start = performance.now();
      const outcomes = await Promise.all(JSON.parse(raw).map((job) => execute(registry, job)));
      const report = `[${outcomes.map(outcomeJson).join(",")}]`;
      samples.push((performance.now() - start) * 1000);
      if (!report.includes('"status":"success"')) throw new Error(`unexpected outcome ${report}`);
    }
    samples.sort((a, b) => a - b);
    console.log(pause, samples[samples.length >> 1], samples[Math.floor((samples.length * 95) / 100)]);
  }
  process.exit(0);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
