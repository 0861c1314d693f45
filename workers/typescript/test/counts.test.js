"use strict";
// Counts by state for a task filter through the client (taskCounts, listTasks({ counts: true })):
// against a real orchestrator (PostgreSQL, RabbitMQ, target/debug/tasker-orchestrator) with the
// fixture handlers in an in-process Worker.
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const { Client, InvalidRequestError, Worker } = require("../dist/index.js");
require("../dist/fixtures/handlers.js");
const { repoRoot, startOrchestrator } = require("./support/orchestrator.js");
const { apiError, ns } = require("./support/answers.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");

describe("Client's task counts", () => {
  let orchestrator;
  let worker;
  let running;
  let client;

  before(async () => {
    orchestrator = await startOrchestrator({ templates, namespaces: [ns] });
    Object.assign(process.env, orchestrator.env);
    worker = Worker.start({ templates, healthPort: 0, concurrency: 8 });
    running = worker.run();
    client = new Client(orchestrator.baseUrl);
  });

  after(async () => {
    await worker?.stop();
    await running;
    await orchestrator?.stop();
  });

  it("counts each state the filter matches, a state filter on the list narrowing none", async () => {
    const run = randomUUID();
    const create = (context, options) => client.createTask(ns, "retry_then_succeed", { ...context, run }, options);
    // `flaky` has three attempts: asked to succeed on the fourth, it fails on all of them.
    const failing = await Promise.all([1, 2].map(() => create({ succeed_on_attempt: 4 })));
    const passing = await Promise.all([1, 2, 3].map(() => create({ succeed_on_attempt: 1 })));
    const later = await Promise.all([1, 2].map(() => create({}, { delay: "1h" })));
    await client.cancel(later[1]);
    for (const task of failing) assert.equal((await client.wait(task, 30_000)).state, "error");
    for (const task of passing) assert.equal((await client.wait(task, 30_000)).state, "complete");

    const counts = await client.taskCounts({ namespace: ns, name: "retry_then_succeed", context: { run } });
    assert.deepEqual(counts, { scheduled: 1, running: 0, complete: 3, error: 2, cancelled: 1, total: 7 });

    // A state filter (and the page's limit) narrows the page, not its counts.
    const page = await client.listTasks({ state: "error", context: { run }, limit: 1, counts: true });
    assert.deepEqual(page.tasks.map((t) => t.state), ["error"]);
    assert.notEqual(page.nextBefore, null);
    assert.deepEqual(page.counts, counts);
    // Without counts: true the page has none.
    assert.equal((await client.listTasks({ context: { run }, limit: 1 })).counts, null);
    // Filters that match nothing count nothing; the time filters count too.
    const none = await client.taskCounts({ name: "linear", context: { run } });
    assert.equal(none.total, 0);
    const since = await client.taskCounts({ context: { run }, createdAfter: new Date(Date.now() + 3_600_000) });
    assert.equal(since.total, 0);
    await assert.rejects(
      client.taskCounts({ context: ["run"] }),
      apiError(InvalidRequestError, 400, "invalid_context_filter"),
    );
  });

  it("finds a task by the beginning of its id or by its idempotency key", async () => {
    const key = `lookup-${randomUUID()}`;
    const task = await client.createTask(ns, "retry_then_succeed", {}, { idempotencyKey: key, delay: "1h" });
    const byPrefix = await client.listTasks({ idPrefix: task.id.slice(0, 28) });
    assert.deepEqual(byPrefix.tasks.map((t) => t.id), [task.id]);
    assert.deepEqual((await client.listTasks({ idempotencyKey: key })).tasks.map((t) => t.id), [task.id]);
    assert.deepEqual((await client.listTasks({ idempotencyKey: `${key}-other` })).tasks, []);
    await assert.rejects(client.listTasks({ idPrefix: "nothex" }), apiError(InvalidRequestError, 400, "invalid_id_prefix"));
    await client.cancel(task);
  });
});
