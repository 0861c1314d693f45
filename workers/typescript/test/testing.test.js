"use strict";
// tasker-workflows/testing: handler tests with no server, judged by the worker core as the engine
// would.
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

require("../dist/fixtures/handlers.js");
const { Registry, RetryableError } = require("../dist/index.js");
const { runHandler } = require("../dist/testing.js");

const templates = path.join(__dirname, "../../../tests/fixtures/task_templates/typescript");

test("a decision from its template names its branch; a branch it lacks fails for good", async () => {
  const small = await runHandler("route_by_size", {
    template: path.join(templates, "conditional.yaml"),
    step: "route",
    parentResults: { check: { value: 7 } },
  });
  assert.ok(small.success, JSON.stringify(small));
  assert.deepEqual(small.branches, ["small"]);
  const bad = await runHandler(() => ({ branches: ["medium"] }), { stepType: "decision", branches: ["small", "large"] });
  assert.deepEqual([bad.status, bad.kind, bad.retryable, bad.retried], ["failure", "invalid_decision", false, false]);
  const batches = await runHandler(() => ({ rows: 3 }), { stepType: "batchable" });
  assert.equal(batches.kind, "invalid_batches");
});

test("retries follow the template's policy", async () => {
  const template = path.join(templates, "retry_then_succeed.yaml");
  const first = await runHandler("flaky", { template, step: "flaky", context: { succeed_on_attempt: 3 } });
  assert.deepEqual([first.status, first.retryable, first.retried], ["failure", true, true]);
  assert.equal(first.retryIn, 0.02);
  const last = await runHandler("flaky", { template, step: "flaky", attempt: 3, context: { succeed_on_attempt: 4 } });
  assert.deepEqual([last.retryable, last.retried, last.retryIn], [true, false, undefined]);
  const asked = await runHandler(() => { throw new RetryableError("later", { kind: "busy", retryAfter: 2 }); }, { maxAttempts: 2 });
  assert.deepEqual([asked.kind, asked.retryIn], ["busy", 2]);
});

test("timeouts, streams, batches, big integers and bad steps", async () => {
  const slow = await runHandler((ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", resolve)), { timeout: 0.05 });
  assert.deepEqual([slow.kind, slow.retryable], ["timeout", true]);
  const out = await runHandler(
    (ctx) => {
      ctx.emit("progress", { rows: ctx.input.rows.length });
      return { sum: ctx.input.rows.reduce((a, b) => a + b, 0), attempt: ctx.attempt, of: ctx.maxAttempts, big: ctx.context.big };
    },
    { input: { rows: [1, 2, 3] }, attempt: 2, maxAttempts: 5, context: { big: 2n ** 60n } },
  );
  assert.deepEqual(out.result, { sum: 6, attempt: 2, of: 5, big: 2n ** 60n });
  assert.deepEqual(out.emitted, [["progress", { rows: 3 }]]);
  const unknown = await runHandler("nobody", { registry: new Registry() });
  assert.deepEqual([unknown.kind, unknown.retryable], ["unknown_handler", false]);
  await assert.rejects(runHandler(() => 1, { attempt: 4, maxAttempts: 3 }), /attempt 4 is not between 1 and max_attempts/);
});
