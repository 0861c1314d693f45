"use strict";
// Operations by filter through the client: against a real orchestrator (PostgreSQL, RabbitMQ,
// target/debug/tasker-orchestrator) with the fixture handlers in an in-process Worker, and their
// wire against a stand-in API. Nothing sleeps but waitOperation's polls.
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const { Client, ConflictError, InvalidRequestError, NotFoundError, Worker, isFinished } = require("../dist/index.js");
require("../dist/fixtures/handlers.js");
const { repoRoot, startOrchestrator } = require("./support/orchestrator.js");
const { apiError, ns } = require("./support/answers.js");
const { recordedStandIn } = require("./support/stand_in.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");

describe("Client's operations by filter", () => {
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

  /** `n` tasks in error: `flaky` has three attempts and succeeds on the fourth, so a retry completes them. */
  async function failedTasks(run, n) {
    const context = { succeed_on_attempt: 4, run };
    const created = await Promise.all(
      Array.from({ length: n }, () => client.createTask(ns, "retry_then_succeed", context)),
    );
    for (const task of created) assert.equal((await client.wait(task, 30_000)).state, "error");
    return created.map((t) => t.id);
  }

  it("counts, retries every failed task a filter matches, and follows the operation to its end", async () => {
    const run = randomUUID();
    const ids = await failedTasks(run, 3);
    const filter = {
      namespace: ns,
      name: "retry_then_succeed",
      step: "flaky",
      errorKind: "transient",
      context: { run },
      createdAfter: new Date(Date.now() - 3_600_000),
    };

    const count = await client.countOperation({ action: "retry", filter });
    assert.equal(count.matched, 3);
    assert.deepEqual(new Set(count.sample), new Set(ids));
    assert.equal(count.filter.state, "error", "retry acts on tasks in error");
    assert.deepEqual((await client.operations()).operations, [], "a dry run starts none");

    const started = await client.startOperation({
      action: "retry",
      filter,
      reason: "upstream fixed",
      by: "user:ts-test",
    });
    assert.deepEqual(
      [started.action, started.state, started.matched, started.reason, started.by],
      ["retry", "running", 3, "upstream fixed", "user:ts-test"],
    );
    assert.deepEqual(started.filter.context, { run });
    assert.equal(started.finishedAt, null);
    assert.ok(started.createdAt instanceof Date);

    const readings = [];
    const done = await client.waitOperation(started, 30_000, { onProgress: (op) => readings.push(op) });
    assert.equal(done.state, "complete");
    assert.ok(isFinished(done));
    assert.deepEqual([done.acted, done.matched, done.skipped], [3, 3, 0]);
    assert.ok(done.finishedAt >= done.createdAt);
    assert.deepEqual(readings.at(-1), done);
    assert.deepEqual(await client.operation(started.id), done);

    const reason = `retried: operation ${started.id}: upstream fixed`;
    for (const id of ids) {
      const task = await client.wait(id, 30_000);
      assert.equal(task.state, "complete");
      assert.deepEqual(task.result, { after: { attempt: 1, parents: { flaky: { attempts: 4 } } } });
      const history = await client.history(id);
      assert.ok(history.some((t) => t.reason === reason && t.by === "user:ts-test"), JSON.stringify(history));
    }
    assert.equal((await client.countOperation({ action: "retry", filter })).matched, 0);
    await assert.rejects(client.cancelOperation(done), apiError(ConflictError, 409, "operation_finished"));
  });

  it("cancels scheduled tasks by id, and lists operations newest first, a page at a time", async () => {
    const run = randomUUID();
    const later = await Promise.all(
      [1, 2].map((value) => client.createTask(ns, "linear", { value, run }, { delay: "1h" })),
    );
    const filter = { ids: later.map((t) => t.id), context: { run } };
    const started = await client.startOperation({ action: "cancel", filter, reason: "not needed" });
    const done = await client.waitOperation(started.id, 30_000);
    assert.deepEqual([done.state, done.acted, done.matched], ["complete", 2, 2]);
    for (const task of later) assert.equal((await client.getTask(task)).state, "cancelled");

    // Operations that match nothing start all the same.
    const more = [];
    for (const name of ["none-1", "none-2"]) {
      more.push(await client.startOperation({ action: "cancel", filter: { name } }));
    }
    const first = await client.operations({ limit: 2 });
    assert.deepEqual(first.operations.map((o) => o.id), [more[1].id, more[0].id]);
    assert.equal(first.nextBefore, more[0].id);
    const second = await client.operations({ limit: 2, before: first.nextBefore });
    assert.equal(second.operations[0].id, started.id);
  });

  it("rejects with the API's codes", async () => {
    await assert.rejects(client.operation(randomUUID()), apiError(NotFoundError, 404, "operation_not_found"));
    await assert.rejects(client.cancelOperation(randomUUID()), apiError(NotFoundError, 404, "operation_not_found"));
    await assert.rejects(
      client.countOperation({ action: "resolve", filter: { namespace: ns } }),
      apiError(InvalidRequestError, 400, "missing_result"),
    );
    await assert.rejects(
      client.startOperation({ action: "retry", filter: { state: "running" } }),
      apiError(InvalidRequestError, 400, "invalid_filter"),
    );
    await assert.rejects(
      client.startOperation({ action: "delete" }),
      apiError(InvalidRequestError, 400, "invalid_action"),
    );
  });
});

describe("Client's operations by filter, on the wire", () => {
  const opId = "019a0000-0000-7000-8000-0000000000c1";
  const taskId = "019a0000-0000-7000-8000-0000000000c2";
  const filter = {
    namespace: ns, name: "linear", version: null, state: "error", step: null, error_kind: "TimeoutError",
    created_after: "2026-11-27T10:00:00Z", created_before: null, context: { order_id: 42 }, ids: null, queue: null,
    reason: null, dead_letters: null,
  };
  const operation = {
    id: opId, action: "resolve", filter, reason: "by hand", by: "user:ops", state: "running", matched: 3,
    acted: 1, skipped: 0, note: null, created_at: "2026-11-27T10:02:03.123Z", updated_at: "2026-11-27T10:02:04Z",
    finished_at: null,
  };
  const complete = { ...operation, state: "complete", acted: 2, skipped: 1, finished_at: "2026-11-27T10:02:05Z" };
  const answers = {
    "POST /v1/operations": [
      [200, { action: "resolve", filter, matched: 3, sample: [taskId] }],
      [201, operation],
    ],
    // Then running again, for good: a wait whose time runs out.
    [`GET /v1/operations/${opId}`]: [[200, operation], [200, operation], [200, complete], [200, operation]],
    [`POST /v1/operations/${opId}/cancel`]: [
      [200, { ...operation, state: "cancelled", note: "cancelled by user:ops" }],
    ],
    "GET /v1/operations": [[200, { operations: [complete], next_before: opId }]],
  };
  const { requests, base } = recordedStandIn(answers);

  it("sends the request as the API takes it and reads its answers", async () => {
    const client = new Client(base());
    const request = {
      action: "resolve",
      filter: {
        namespace: ns, name: "linear", errorKind: "TimeoutError", context: { order_id: 42 },
        createdAfter: new Date("2026-11-27T11:00:00+01:00"), ids: [taskId],
      },
      result: { value: 1 },
    };
    const count = await client.countOperation(request);
    assert.deepEqual([count.sample, count.deadLetterSample], [[taskId], null]);
    assert.deepEqual(count.filter.createdAfter, new Date("2026-11-27T10:00:00Z"));
    assert.equal(count.filter.errorKind, "TimeoutError");
    // The filter read back goes out again as it came.
    const op = await client.startOperation({
      action: "resolve",
      filter: count.filter,
      result: { value: 1 },
      reason: "by hand",
    });
    assert.deepEqual(op.createdAt, new Date("2026-11-27T10:02:03.123Z"));

    const states = [];
    const done = await client.waitOperation(op, 30_000, { onProgress: (o) => states.push(o.state) });
    assert.deepEqual(states, ["running", "running", "complete"]);
    assert.deepEqual([done.acted, done.skipped, done.note], [2, 1, null]);
    assert.equal((await client.waitOperation(opId, 300)).state, "running", "the time ran out");
    const cancelled = await client.cancelOperation(opId);
    assert.deepEqual([cancelled.state, cancelled.note], ["cancelled", "cancelled by user:ops"]);
    const page = await client.operations({ limit: 1, before: opId });
    assert.deepEqual(page.operations, [done]);
    assert.equal(page.nextBefore, opId);

    const posted = requests.filter(([method, url]) => method === "POST" && url === "/v1/operations").map((r) => r[2]);
    assert.deepEqual(posted, [
      {
        action: "resolve",
        filter: {
          namespace: ns, name: "linear", error_kind: "TimeoutError", context: { order_id: 42 },
          created_after: "2026-11-27T10:00:00.000Z", ids: [taskId],
        },
        result: { value: 1 },
        dry_run: true,
      },
      {
        action: "resolve",
        filter: { ...filter, created_after: "2026-11-27T10:00:00.000Z" },
        result: { value: 1 },
        reason: "by hand",
        dry_run: false,
      },
    ]);
    assert.ok(requests.some(([m, url]) => m === "GET" && url === `/v1/operations?limit=1&before=${opId}`));
    const cancel = `/v1/operations/${opId}/cancel`;
    assert.ok(requests.some(([m, url, body]) => m === "POST" && url === cancel && body === null));
  });
});
