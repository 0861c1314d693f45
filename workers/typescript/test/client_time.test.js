"use strict";
// The time calls' requests and answers against a stand-in for the API (no orchestrator): the
// paths, methods and bodies of the contract, and the values read from its answers.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");

const { Client, NotFoundError, isTerminal } = require("../dist/index.js");
const { apiError, ns } = require("./support/answers.js");
const { recordedStandIn } = require("./support/stand_in.js");

describe("Client and the time API's wire", () => {
  const taskId = "019a0000-0000-7000-8000-000000000001";
  const created = { created_at: "2026-11-26T09:00:00.123456Z" };
  const scheduledTask = {
    id: taskId,
    namespace: ns,
    name: "linear",
    version: "1.0.0",
    state: "scheduled",
    context: { value: 6 },
    idempotency_key: null,
    open_steps: 4,
    result: null,
    error: null,
    completed_at: null,
    duration_ms: null,
    run_at: "2026-11-27T02:30:00Z",
    some_later_field: 1,
    ...created,
  };
  const waitStep = {
    id: "019a0000-0000-7000-8000-000000000002",
    name: "approval",
    handler: "tasker:wait",
    step_type: "wait",
    state: "waiting",
    attempt: 1,
    max_attempts: 1,
    ...created,
    wait: { kind: "signal", signal: "approved", event: null, until: "2026-12-03T09:00:00Z", on_timeout: "fail" },
  };
  const signal = {
    task_id: taskId,
    name: "approved",
    signal_id: "approval-1",
    payload: { approved_by: "ops" },
    received_at: "2026-11-26T09:00:01Z",
    consumed_by: null,
    consumed_at: null,
  };
  const schedule = {
    namespace: ns,
    name: "nightly report",
    template: "linear",
    version: null,
    cron: "30 2 * * *",
    timezone: "Europe/Berlin",
    context: { value: 6 },
    overlap: "skip",
    catch_up: "1h",
    paused: false,
    note: null,
    next_fire_at: "2026-11-27T01:30:00Z",
    last_fire_at: null,
    last_task_id: null,
    fires: 0,
    skipped: 0,
    updated_at: "2026-11-26T09:00:00Z",
    ...created,
  };
  const taskPath = `/v1/tasks/${taskId}`;
  const schedulePath = `/v1/schedules/${ns}/nightly%20report`;
  const answers = {
    "POST /v1/tasks": [201, scheduledTask],
    [`GET ${taskPath}/steps`]: [200, { steps: [waitStep], next: null }],
    [`POST ${taskPath}/signals/approved`]: [201, signal],
    [`GET ${taskPath}/signals`]: [200, { signals: [signal] }],
    "GET /v1/schedules": [200, { schedules: [schedule] }],
    [`GET ${schedulePath}`]: [200, { ...schedule, upcoming: ["2026-11-27T01:30:00Z"] }],
    "POST /v1/schedules": [201, schedule],
    [`PATCH ${schedulePath}`]: [200, schedule],
    [`DELETE ${schedulePath}`]: [204, null],
    [`POST ${schedulePath}/pause`]: [200, { ...schedule, paused: true, note: "why" }],
    [`POST ${schedulePath}/resume`]: [200, schedule],
    [`POST ${schedulePath}/trigger`]: [201, { ...scheduledTask, state: "running" }],
    [`POST ${schedulePath}/backfill`]: [200, { created: 1, existing: 1, task_ids: ["a", "b"] }],
  };
  const { requests, base } = recordedStandIn(answers);
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    const task = await client.createTask(ns, "linear", { value: 6 }, { runAt: new Date("2026-11-27T03:30:00+01:00") });
    assert.equal(task.state, "scheduled");
    assert.equal(isTerminal(task), false);
    assert.deepEqual(task.runAt, new Date("2026-11-27T02:30:00Z"));
    for (const delay of ["10m", 600, 1.5]) {
      await client.createTask(ns, "linear", { value: 6 }, { delay });
    }

    const [step] = await client.steps(task);
    assert.deepEqual(step.wait, {
      kind: "signal",
      signal: "approved",
      event: null,
      until: new Date("2026-12-03T09:00:00Z"),
      onTimeout: "fail",
    });
    const sent = await client.signal(task, "approved", { approved_by: "ops" }, { signalId: "approval-1" });
    assert.deepEqual(sent, {
      taskId,
      name: "approved",
      signalId: "approval-1",
      payload: { approved_by: "ops" },
      receivedAt: new Date("2026-11-26T09:00:01Z"),
      consumedBy: null,
      consumedAt: null,
    });
    await client.signal(task.id, "approved");
    assert.deepEqual(await client.signals(task), [sent]);

    const listed = await client.listSchedules({ namespace: ns });
    assert.deepEqual(
      listed.map((c) => [c.name, c.catchUp, c.upcoming, c.nextFireAt]),
      [["nightly report", "1h", null, new Date("2026-11-27T01:30:00Z")]],
    );
    assert.deepEqual(await client.listSchedules(), listed);
    assert.deepEqual((await client.getSchedule(ns, "nightly report")).upcoming, [new Date("2026-11-27T01:30:00Z")]);
    const definition = { namespace: ns, name: "nightly report", template: "linear", cron: "30 2 * * *", catchUp: "2h" };
    assert.deepEqual(await client.applySchedule(definition), listed[0]);
    assert.deepEqual(await client.updateSchedule(ns, "nightly report", { cron: "0 3 * * *" }), listed[0]);
    assert.equal(await client.deleteSchedule(ns, "nightly report"), undefined);
    assert.equal((await client.pauseSchedule(ns, "nightly report", { note: "why" })).note, "why");
    assert.equal((await client.pauseSchedule(ns, "nightly report")).paused, true);
    assert.equal((await client.resumeSchedule(ns, "nightly report")).paused, false);
    assert.equal((await client.triggerSchedule(ns, "nightly report")).state, "running");
    const backfill = await client.backfillSchedule(
      ns,
      "nightly report",
      new Date("2026-01-01T00:00:00Z"),
      "2026-01-02T00:00:00Z",
    );
    assert.deepEqual(backfill, { created: 1, existing: 1, taskIds: ["a", "b"] });
    await assert.rejects(client.getSchedule(ns, "missing"), apiError(NotFoundError, 404, "no_route"));

    const create = { namespace: ns, name: "linear", context: { value: 6 } };
    const { catchUp: _, ...definitionFields } = definition;
    assert.deepEqual(requests, [
      ["POST", "/v1/tasks", { ...create, run_at: "2026-11-27T02:30:00.000Z" }],
      ...["10m", "600s", "1500ms"].map((delay) => ["POST", "/v1/tasks", { ...create, delay }]),
      ["GET", `${taskPath}/steps?limit=1000`, null],
      ["POST", `${taskPath}/signals/approved`, { signal_id: "approval-1", payload: { approved_by: "ops" } }],
      ["POST", `${taskPath}/signals/approved`, {}],
      ["GET", `${taskPath}/signals`, null],
      ["GET", `/v1/schedules?namespace=${ns}`, null],
      ["GET", "/v1/schedules", null],
      ["GET", schedulePath, null],
      ["POST", "/v1/schedules", { ...definitionFields, catch_up: "2h" }],
      ["PATCH", schedulePath, { cron: "0 3 * * *" }],
      ["DELETE", schedulePath, null],
      ["POST", `${schedulePath}/pause`, { note: "why" }],
      ["POST", `${schedulePath}/pause`, {}],
      ["POST", `${schedulePath}/resume`, null],
      ["POST", `${schedulePath}/trigger`, null],
      ["POST", `${schedulePath}/backfill`, { from: "2026-01-01T00:00:00.000Z", to: "2026-01-02T00:00:00Z" }],
      ["GET", `/v1/schedules/${ns}/missing`, null],
    ]);
  });
});
