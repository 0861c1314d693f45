"use strict";
// WorkflowEnv of tasker-workflows/testing (docs/testing.md): the test kit's scenarios
// (tests/fixtures/test_kit) on the real engine in test mode with TypeScript handlers in this
// process — a week's sleep, a signal wait that times out after three days and one that gets its
// signal, two retries an hour and two hours apart, a daily schedule — each in under a second of
// wall time. tests/fast/test_kit.rs runs the same scenarios against a normal orchestrator.
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

const { Registry, RetryableError } = require("../dist/index.js");
const { WorkflowEnv } = require("../dist/testing.js");

const templates = path.join(__dirname, "../../../tests/fixtures/test_kit/templates");
const NS = "test_kit";
const DAY = 24 * 3600 * 1000;
const ms = (t) => new Date(t).getTime();

function kit() {
  return new Registry()
    .register("kit_stamp", (ctx) => ({ step: ctx.stepName }))
    .register("kit_flaky", (ctx) => {
      if (ctx.attempt < 3) throw new RetryableError(`attempt ${ctx.attempt} fails`, { kind: "flaky" });
      return { attempts: ctx.attempt };
    })
    .register("kit_echo", async (ctx) => ctx.parentResults.all());
}

async function steps(env, task) {
  return Object.fromEntries((await env.client.steps(task)).map((s) => [s.name, s]));
}

async function run(env, name, signal) {
  const started = performance.now();
  const task = await env.client.createTask(NS, name, {});
  if (signal !== undefined) await env.client.signal(task, "approved", signal);
  const done = await env.wait(task);
  return [done, performance.now() - started];
}

test("days of waits, retries and a schedule pass in under a second each", async (t) => {
  const env = await WorkflowEnv.start(templates, { registry: kit() });
  t.after(() => env.stop());

  const [week, weekMs] = await run(env, "week");
  assert.equal(week.state, "complete");
  assert.ok(weekMs < 1000, `a week took ${weekMs} ms`);
  const w = await steps(env, week);
  assert.ok(ms(w.after.processedAt) - ms(w.before.processedAt) >= 7 * DAY);

  const [timedOut, timedOutMs] = await run(env, "approval");
  assert.ok(timedOut.state === "complete" && timedOutMs < 1000, `${timedOutMs} ms`);
  assert.deepEqual((await steps(env, timedOut)).decide.result, { ask: { timed_out: true } });
  const [approved, approvedMs] = await run(env, "approval", { by: "ana" });
  assert.ok(approved.state === "complete" && approvedMs < 1000, `${approvedMs} ms`);
  assert.deepEqual((await steps(env, approved)).decide.result.ask, { by: "ana" });

  const [flaky, flakyMs] = await run(env, "flaky");
  assert.ok(flaky.state === "complete" && flakyMs < 1000, `${flakyMs} ms`);
  const f = (await steps(env, flaky)).flaky;
  assert.deepEqual([f.attempt, f.result], [3, { attempts: 3 }]);
  assert.ok(ms(f.processedAt) - ms(flaky.createdAt) >= 3 * 3600 * 1000);

  const started = performance.now();
  await env.client.applySchedule({ namespace: NS, name: "daily", template: "report", cron: "0 6 * * *" });
  for (const day of [1, 2]) {
    const skipped = await env.skip();
    assert.ok(skipped.skipped, JSON.stringify(skipped));
    assert.match(new Date(skipped.clock.now).toISOString(), /T06:00:00/);
    const reports = (await env.client.listTasks({ namespace: NS, name: "report" })).tasks;
    assert.equal(reports.length, day);
    assert.equal((await env.wait(reports[0])).state, "complete");
  }
  assert.ok(performance.now() - started < 1000);

  const before = ms(await env.now());
  const clock = await env.advance("3d");
  assert.ok(clock.testClock && ms(clock.now) - before >= 3 * DAY);
});
