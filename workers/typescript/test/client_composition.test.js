"use strict";
// The composition calls against the same kind of stand-in: child tasks and their links, a step's
// namespace, child and unserved flag, the parent filter and the workers listing.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");

const { Client } = require("../dist/index.js");
const { ns, runningTask } = require("./support/answers.js");
const { standIn } = require("./support/stand_in.js");

describe("Client and the composition API's wire", () => {
  const parentId = "019a0000-0000-7000-8000-000000000010";
  const childId = "019a0000-0000-7000-8000-000000000001";
  const childStepId = "019a0000-0000-7000-8000-000000000011";
  const created = { created_at: "2026-11-26T09:00:00.123456Z" };
  const task = runningTask(childId, created);
  const link = {
    task_id: childId,
    step_id: childStepId,
    step_name: "enrich",
    attempt: 1,
    state: "running",
    namespace: "shop",
    name: "enrich_order",
    version: "1.2.0",
  };
  const parent = { ...task, id: parentId, parent_task_id: null, parent_step_id: null, depth: 0, children: [link] };
  const child = {
    ...task,
    namespace: "shop",
    name: "enrich_order",
    version: "1.2.0",
    parent_task_id: parentId,
    parent_step_id: childStepId,
    depth: 1,
    children: null,
  };
  const step = {
    id: childStepId,
    name: "enrich",
    handler: "tasker:child",
    step_type: "child",
    state: "waiting",
    attempt: 1,
    max_attempts: 1,
    ...created,
    wait: null,
    namespace: ns,
    unserved: false,
    child: { namespace: "shop", name: "enrich_order", version: "1.2.0", task_id: childId, on_parent_cancel: "abandon" },
  };
  const routed = {
    ...step,
    id: "019a0000-0000-7000-8000-000000000012",
    name: "score",
    handler: "score",
    step_type: "standard",
    state: "enqueued",
    namespace: "python_examples",
    child: null,
    unserved: true,
  };
  const worker = {
    id: "019a0000-0000-7000-8000-000000000020",
    name: "worker-1",
    language: "typescript",
    version: "0.1.0",
    host: "box",
    pid: 4242,
    namespaces: [ns],
    handlers: ["double", "score"],
    concurrency: 8,
    heartbeat_ms: 5000,
    started_at: "2026-11-26T08:00:00Z",
    last_seen_at: "2026-11-26T09:00:00Z",
    live: true,
  };
  const gone = { ...worker, id: "019a0000-0000-7000-8000-000000000021", live: false };
  const answers = {
    [`GET /v1/tasks/${parentId}`]: [200, parent],
    "GET /v1/tasks": [200, { tasks: [child], next_before: null }],
    [`GET /v1/tasks/${parentId}/steps`]: [200, { steps: [step, routed], next: null }],
    [`GET /v1/tasks/${childId}/steps`]: [200, { steps: [{ ...step, namespace: undefined, child: undefined }], next: null }],
    [`GET /v1/tasks/${childId}`]: [200, { ...task, some_later_field: 1 }],
    "GET /v1/workers": [200, { workers: [worker, gone], heartbeat_seconds: 10 }],
  };
  const requests = [];
  const base = standIn(answers, (req) => requests.push([req.method, req.url]));
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    const got = await client.getTask(parentId);
    assert.deepEqual([got.parentTaskId, got.parentStepId, got.depth], [null, null, 0]);
    assert.deepEqual(got.children, [
      {
        taskId: childId,
        stepId: childStepId,
        stepName: "enrich",
        attempt: 1,
        state: "running",
        namespace: "shop",
        name: "enrich_order",
        version: "1.2.0",
      },
    ]);
    const [listed] = (await client.listTasks({ parent: parentId })).tasks;
    assert.deepEqual(
      [listed.parentTaskId, listed.parentStepId, listed.depth, listed.children],
      [parentId, childStepId, 1, null],
    );
    const iterated = [];
    for await (const t of client.iterateTasks({ state: "running", parent: parentId })) iterated.push(t.id);
    assert.deepEqual(iterated, [childId]);
    // A task and a step from a server before composition: what it leaves out reads as null (the
    // answer types follow the document, with no default of the client's own).
    const older = await client.getTask(childId);
    assert.deepEqual([older.parentTaskId, older.parentStepId, older.depth, older.children], [null, null, null, null]);
    const [olderStep] = await client.steps(childId);
    assert.deepEqual([olderStep.namespace, olderStep.child], [null, null]);

    const [enrich, score] = await client.steps(parentId);
    assert.deepEqual([enrich.stepType, enrich.handler, enrich.namespace, enrich.unserved], ["child", "tasker:child", ns, false]);
    assert.deepEqual(enrich.child, {
      namespace: "shop",
      name: "enrich_order",
      version: "1.2.0",
      taskId: childId,
      onParentCancel: "abandon",
    });
    assert.deepEqual([score.namespace, score.child, score.unserved], ["python_examples", null, true]);

    const [live, stale] = await client.workers({ all: true });
    assert.deepEqual(live, {
      id: worker.id,
      name: "worker-1",
      language: "typescript",
      version: "0.1.0",
      host: "box",
      pid: 4242,
      namespaces: [ns],
      handlers: ["double", "score"],
      concurrency: 8,
      heartbeatMs: 5000,
      startedAt: new Date("2026-11-26T08:00:00Z"),
      lastSeenAt: new Date("2026-11-26T09:00:00Z"),
      live: true,
    });
    assert.equal(stale.live, false);
    assert.deepEqual(await client.workers(), [live, stale]);

    assert.deepEqual(requests, [
      ["GET", `/v1/tasks/${parentId}`],
      ["GET", `/v1/tasks?parent=${parentId}`],
      ["GET", `/v1/tasks?state=running&parent=${parentId}`],
      ["GET", `/v1/tasks/${childId}`],
      ["GET", `/v1/tasks/${childId}/steps?limit=1000`],
      ["GET", `/v1/tasks/${parentId}/steps?limit=1000`],
      ["GET", "/v1/workers?all=true"],
      ["GET", "/v1/workers"],
    ]);
  });
});

// The task list's filters against a stand-in: times (a `Date` in UTC, a string as given) and the
// context as JSON text, in the query string of `listTasks` and `iterateTasks`.
describe("Client and the task list filters' wire", () => {
  const taskId = "019a0000-0000-7000-8000-000000000001";
  const task = runningTask(taskId, { created_at: "2026-11-26T09:00:00Z" });
  const requests = [];
  const base = standIn({ "GET /v1/tasks": [200, { tasks: [task], next_before: null }] }, (req) =>
    requests.push([req.method, req.url]),
  );

  it("sends the times and the context in the query", async () => {
    const client = new Client(base());
    const page = await client.listTasks({
      createdAfter: new Date("2026-11-26T10:00:00+01:00"),
      createdBefore: "2026-11-27T00:00:00Z",
      context: { order_id: 42, customer: { tier: "gold" }, big: 12345678901234567890n },
    });
    assert.deepEqual(page.tasks.map((t) => t.id), [taskId]);
    const iterated = [];
    for await (const t of client.iterateTasks({ state: "running", context: { tags: ["rush"] } })) iterated.push(t.id);
    assert.deepEqual(iterated, [taskId]);
    const context = encodeURIComponent('{"order_id":42,"customer":{"tier":"gold"},"big":12345678901234567890}');
    assert.deepEqual(requests, [
      [
        "GET",
        "/v1/tasks?created_after=2026-11-26T09%3A00%3A00.000Z&created_before=2026-11-27T00%3A00%3A00Z" +
          `&context=${context}`,
      ],
      ["GET", `/v1/tasks?state=running&context=${encodeURIComponent('{"tags":["rush"]}')}`],
    ]);
  });
});
