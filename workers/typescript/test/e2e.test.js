"use strict";
// End to end: a real orchestrator, PostgreSQL and RabbitMQ, and the Worker class in this process.
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

const { Worker, Registry, PermanentError } = require("../dist/index.js");
const { repoRoot, startOrchestrator, runTask } = require("./support/orchestrator.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
const ns = "typescript_examples";

test("tasks run through the binding: results, permanent failures and concurrent slow steps", async (t) => {
  const orchestrator = await startOrchestrator({ templates, namespaces: [ns] });
  t.after(() => orchestrator.stop());
  Object.assign(process.env, orchestrator.env);

  let running = 0;
  let maxRunning = 0;
  const heartbeats = [];
  let release;
  const allStarted = new Promise((resolve) => (release = resolve));
  const value = async (ctx) => {
    const parents = Object.values(await ctx.parentResults.all());
    return parents.length === 0 ? ctx.context.value : parents.reduce((s, r) => s + r.value, 0);
  };
  const registry = new Registry()
    .register("double", async (ctx) => ({ value: (await value(ctx)) * 2 }))
    .register("square", async (ctx) => ({ value: (await value(ctx)) ** 2 }))
    .register("add_ten", async (ctx) => ({ value: (await value(ctx)) + 10 }))
    .register("sum_parents", async (ctx) => ({ value: await value(ctx) }))
    .register("fail_permanently", () => {
      throw new PermanentError("input rejected for good");
    })
    // Three slow steps must run at once (concurrency 4): each waits until all three started.
    .register("sleep", async (ctx) => {
      // Each slow step is its worker's while it runs (the core answers the heartbeat).
      heartbeats.push([ctx.heartbeat(), ctx.timeout]);
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      if (running === 3) release();
      await allStarted;
      running -= 1;
      return { slept_ms: 0 };
    })
    .register("echo_attempts", async (ctx) => ({ attempt: ctx.attempt, parents: await ctx.parentResults.all() }));

  const worker = Worker.start({ templates, healthPort: 0, concurrency: 4, registry });
  const run = worker.run();
  t.after(() => worker.stop());

  const [diamond, failed, ...slow] = await Promise.all([
    runTask(orchestrator.baseUrl, ns, "diamond", { value: 3 }),
    runTask(orchestrator.baseUrl, ns, "permanent_failure", {}),
    runTask(orchestrator.baseUrl, ns, "slow_chain", {}),
    runTask(orchestrator.baseUrl, ns, "slow_chain", {}),
    runTask(orchestrator.baseUrl, ns, "slow_chain", {}),
  ]);
  assert.equal(diamond.state, "complete");
  assert.deepEqual(diamond.result, { join: { value: 52 } });
  assert.equal(failed.state, "error");
  const steps = await (await fetch(`${orchestrator.baseUrl}/v1/tasks/${failed.id}/steps`)).json();
  const doomed = (steps.steps ?? steps).find((s) => s.name === "doomed");
  assert.equal(doomed.state, "failed");
  assert.equal(doomed.attempt, 1);
  assert.equal(doomed.error.kind, "PermanentError");
  assert.equal(doomed.error.message, "input rejected for good");
  assert.match(doomed.error.backtrace, /e2e\.test\.js/);
  for (const task of slow) {
    assert.equal(task.state, "complete");
  }
  assert.equal(maxRunning, 3);
  // slow_chain.yaml gives the step `timeout_seconds: 60`.
  assert.deepEqual(heartbeats, [[true, 60], [true, 60], [true, 60]]);

  await worker.stop();
  await run;
});
