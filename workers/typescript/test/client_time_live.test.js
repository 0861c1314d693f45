"use strict";
// The time calls against a real orchestrator (PostgreSQL, RabbitMQ, target/debug/tasker-orchestrator)
// with the fixture handlers running in an in-process Worker (support/client_cluster.js): a
// delayed task, a signal to the step waiting for it, and a schedule's life. Their wire against a
// stand-in is in client_time.test.js.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { randomUUID } = require("node:crypto");

const { ConflictError, InvalidRequestError, NotFoundError, isTerminal } = require("../dist/index.js");
const { clientCluster } = require("./support/client_cluster.js");
const { apiError, ns } = require("./support/answers.js");

describe("Client", () => {
  const cluster = clientCluster();
  let client;

  before(() => {
    ({ client } = cluster);
  });

  it("keeps a delayed task scheduled until its time, and cancels it", async () => {
    const later = await client.createTask(ns, "linear", { value: 6 }, { delay: "1h" });
    assert.equal(later.state, "scheduled");
    assert.equal(isTerminal(later), false);
    assert.ok(later.runAt instanceof Date);
    assert.ok(Math.abs(later.runAt - later.createdAt - 3_600_000) < 60_000, `${later.runAt} ${later.createdAt}`);
    const scheduled = await client.listTasks({ state: "scheduled", name: "linear" });
    assert.ok(scheduled.tasks.some((t) => t.id === later.id));
    const inSeconds = await client.createTask(ns, "linear", { value: 6 }, { delay: 600 }); // sent as "600s"
    assert.ok(Math.abs(inSeconds.runAt - inSeconds.createdAt - 600_000) < 5_000);
    for (const task of [later, inSeconds]) {
      assert.equal((await client.cancel(task)).state, "cancelled", "a scheduled task cancels");
    }

    const runAt = new Date(Date.now() + 2_000);
    const soon = await client.createTask(ns, "linear", { value: 6 }, { runAt });
    assert.equal(soon.state, "scheduled");
    assert.equal(soon.runAt.getTime(), runAt.getTime());
    const done = await client.wait(soon, 30_000);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { halve: { value: 242 } });
    for (const step of await client.steps(soon)) {
      assert.ok(step.startedAt >= soon.runAt, `${step.name} started before runAt`);
    }
    const moves = (await client.history(soon)).filter((h) => h.step === null).map((h) => [h.from, h.to]);
    assert.ok(moves.some(([from, to]) => from === "scheduled" && to === "running"), JSON.stringify(moves));

    for (const [options, code] of [
      [{ delay: "soon" }, "invalid_delay"],
      [{ delay: "400d" }, "invalid_delay"],
      [{ runAt: "tomorrow" }, "invalid_run_at"],
      [{ runAt: new Date(Date.now() + 400 * 86_400_000) }, "invalid_run_at"],
      [{ runAt, delay: "10m" }, "invalid_run_at"],
    ]) {
      await assert.rejects(
        client.createTask(ns, "linear", { value: 6 }, options),
        apiError(InvalidRequestError, 400, code),
      );
    }
  });

  it("delivers a signal to the step waiting for it, once", async () => {
    const payload = { approved_by: "ts-test" };
    const task = await client.createTask(ns, "signal_wait", { value: 5 });
    await assert.rejects(client.signal(task, "not a name!"), apiError(InvalidRequestError, 400, "invalid_signal_name"));
    await assert.rejects(client.signal(randomUUID(), "approved"), apiError(NotFoundError, 404, "task_not_found"));

    const sent = await client.signal(task, "approved", payload, { signalId: "approval-1" });
    assert.deepEqual(
      [sent.taskId, sent.name, sent.signalId, sent.payload],
      [task.id, "approved", "approval-1", payload],
    );
    assert.ok(sent.receivedAt instanceof Date);
    // The same id and payload again changes nothing; another payload is a conflict.
    const again = await client.signal(task.id, "approved", payload, { signalId: "approval-1" });
    assert.deepEqual([again.signalId, again.receivedAt], [sent.signalId, sent.receivedAt]);
    await assert.rejects(
      client.signal(task, "approved", { approved_by: "someone else" }, { signalId: "approval-1" }),
      apiError(ConflictError, 409, "signal_conflict"),
    );

    const done = await client.wait(task, 30_000);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { finish: { value: 10, approved_by: "ts-test" } });
    const [approval, finish] = await client.steps(task);
    assert.deepEqual([approval.name, approval.stepType, approval.state], ["approval", "wait", "completed"]);
    assert.deepEqual(
      [approval.wait.kind, approval.wait.signal, approval.wait.onTimeout],
      ["signal", "approved", "fail"],
    );
    assert.deepEqual(approval.result, payload);
    assert.equal(finish.wait, null);
    assert.equal(finish.handler, "signal_wait_finish");

    const received = await client.signals(task);
    assert.deepEqual(
      received.map((g) => [g.signalId, g.consumedBy]),
      [["approval-1", "approval"]],
    );
    assert.ok(received[0].consumedAt >= received[0].receivedAt);
    await assert.rejects(client.signal(task, "approved", payload), apiError(ConflictError, 409, "task_finished"));
  });

  it("applies, pauses, resumes, triggers, backfills and deletes a schedule", async () => {
    const name = `nightly-${randomUUID().slice(0, 8)}`;
    const definition = {
      namespace: ns,
      name,
      template: "linear",
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      context: { value: 6 },
    };
    const created = await client.applySchedule(definition);
    assert.deepEqual(
      [created.namespace, created.name, created.template, created.version, created.cron, created.timezone],
      [ns, name, "linear", null, "30 2 * * *", "Europe/Berlin"],
    );
    assert.deepEqual(created.context, { value: 6 });
    assert.deepEqual(
      [created.overlap, created.catchUp, created.paused, created.note, created.fires, created.skipped],
      ["skip", "1h", false, null, 0, 0],
    );
    assert.equal(created.lastTaskId, null);
    assert.equal(created.upcoming, null);
    assert.ok(created.nextFireAt > created.createdAt);

    const shown = await client.getSchedule(ns, name);
    assert.equal(shown.upcoming.length, 5);
    assert.deepEqual(shown.upcoming[0], shown.nextFireAt);
    assert.deepEqual(
      shown.upcoming,
      [...shown.upcoming].sort((a, b) => a - b),
    );
    const listed = await client.listSchedules({ namespace: ns });
    assert.ok(listed.some((c) => c.name === name) && listed.every((c) => c.namespace === ns));
    assert.ok((await client.listSchedules()).some((c) => c.name === name));

    const paused = await client.pauseSchedule(ns, name, { note: "maintenance" });
    assert.deepEqual([paused.paused, paused.note], [true, "maintenance"]);
    const applied = await client.applySchedule({ ...definition, cron: "0 3 * * *" });
    assert.deepEqual([applied.cron, applied.paused], ["0 3 * * *", true], "a pause survives an update");
    const patched = await client.updateSchedule(ns, name, { overlap: "allow" });
    assert.deepEqual([patched.overlap, patched.cron], ["allow", "0 3 * * *"]);
    const resumed = await client.resumeSchedule(ns, name);
    assert.equal(resumed.paused, false);
    assert.ok(resumed.nextFireAt instanceof Date);

    const task = await client.triggerSchedule(ns, name);
    assert.deepEqual([task.namespace, task.name, task.context], [ns, "linear", { value: 6 }]);
    assert.equal((await client.wait(task, 30_000)).state, "complete");

    // 03:00 in Berlin on each of three winter days.
    const from = new Date("2024-01-01T00:00:00Z");
    const to = "2024-01-03T12:00:00Z";
    const backfill = await client.backfillSchedule(ns, name, from, to);
    assert.deepEqual([backfill.created, backfill.existing, new Set(backfill.taskIds).size], [3, 0, 3]);
    const again = await client.backfillSchedule(ns, name, from, to);
    assert.deepEqual([again.created, again.existing], [0, 3], "a backfill is safe to repeat");
    assert.deepEqual([...again.taskIds].sort(), [...backfill.taskIds].sort());
    for (const id of backfill.taskIds) {
      assert.equal((await client.wait(id, 30_000)).state, "complete");
    }

    await assert.rejects(
      client.updateSchedule(ns, name, { cron: "every night" }),
      apiError(InvalidRequestError, 400, "invalid_cron"),
    );
    await assert.rejects(
      client.applySchedule({ ...definition, template: "no_such_template" }),
      apiError(NotFoundError, 404, "unknown_template"),
    );

    assert.equal(await client.deleteSchedule(ns, name), undefined);
    for (const call of [client.getSchedule, client.deleteSchedule, client.triggerSchedule]) {
      await assert.rejects(call.call(client, ns, name), apiError(NotFoundError, 404, "schedule_not_found"));
    }
  });
});
