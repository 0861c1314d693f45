"use strict";
// The API client against a real orchestrator (PostgreSQL, RabbitMQ, target/debug/tasker-orchestrator)
// with the fixture handlers running in an in-process Worker; peers of the same cluster serve a
// lower wait cap, and https:// with tokens required.
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { execFile } = require("node:child_process");
const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const http = require("node:http");
const net = require("node:net");
const path = require("node:path");
const { promisify } = require("node:util");

const {
  ApiError,
  AuthError,
  Client,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  TaskPurgedError,
  TaskerClientError,
  Worker,
  isTerminal,
} = require("../dist/index.js");
// The fixture templates' handlers, into the default registry the Worker runs.
require("../dist/fixtures/handlers.js");
const { freePort, repoRoot, startOrchestrator } = require("./support/orchestrator.js");
const { standIn } = require("./support/stand_in.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
const ns = "typescript_examples";
const packageDir = path.join(__dirname, "..");

/** Asserts `err` is the API's error of class `Class` with `status` and `code`. */
function apiError(Class, status, code) {
  return (err) => {
    assert.ok(err instanceof Class, `${err?.name}: ${err?.message} is not a ${Class.name}`);
    assert.ok(err instanceof ApiError && err instanceof TaskerClientError);
    assert.equal(err.status, status);
    assert.equal(err.code, code);
    assert.equal(err.name, Class.name);
    return true;
  };
}

describe("Client", () => {
  let orchestrator;
  let worker;
  let running;
  let client;
  // The clients read these when no argument names them: only the tests that set them use them.
  const saved = {};
  const clientVars = ["TASKER_URL", "TASKER_TOKEN", "TASKER_TLS_CA_FILE"];

  before(async () => {
    for (const name of clientVars) {
      saved[name] = process.env[name];
      delete process.env[name];
    }
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
    for (const name of clientVars) {
      if (saved[name] !== undefined) process.env[name] = saved[name];
    }
  });

  it("creates a task and waits for its result", async () => {
    const task = await client.createTask(ns, "linear", { value: 6 });
    assert.match(task.id, /^[0-9a-f-]{36}$/);
    assert.equal(task.namespace, ns);
    assert.equal(task.name, "linear");
    assert.equal(task.version, "1.0.0");
    assert.deepEqual(task.context, { value: 6 });
    assert.equal(task.idempotencyKey, null);
    assert.ok(task.createdAt instanceof Date && !Number.isNaN(task.createdAt.getTime()));

    const done = await client.wait(task, 30_000);
    assert.equal(done.id, task.id);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { halve: { value: 242 } });
    assert.equal(done.error, null);
    assert.equal(done.openSteps, 0);
    assert.ok(done.completedAt >= done.createdAt);
    assert.equal(typeof done.durationMs, "number");

    const again = await client.getTask(task.id);
    assert.deepEqual(again, done);
  });

  it("returns the same task for a repeated idempotency key, and refuses it with another context", async () => {
    const key = `order-${randomUUID()}`;
    const first = await client.createTask(ns, "linear", { value: 1 }, { idempotencyKey: key });
    const second = await client.createTask(ns, "linear", { value: 1 }, { idempotencyKey: key });
    assert.equal(second.id, first.id);
    assert.equal(second.idempotencyKey, key);
    await assert.rejects(
      client.createTask(ns, "linear", { value: 2 }, { idempotencyKey: key }),
      apiError(ConflictError, 409, "idempotency_key_reused"),
    );
    assert.equal((await client.wait(first, 30_000)).state, "complete");
  });

  it("returns a running task when the wait runs out, and a long poll outlives the request timeout", async () => {
    // 1 s per request: the 20 s poll below gets its wait on top, or it would fail at 1 s.
    const impatient = new Client(orchestrator.baseUrl, { timeoutMs: 1_000 });
    const task = await impatient.createTask(ns, "slow_chain", { sleep_ms: 2_000 });
    const early = await impatient.wait(task, 200);
    assert.equal(early.state, "running");
    const done = await impatient.wait(task, 20_000);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { quick: { attempt: 1, parents: { slow: { slept_ms: 2_000 } } } });
  });

  it("waits longer than a server's lower cap by polling within it", async () => {
    const capped = await orchestrator.peer({ TASKER_ORCHESTRATOR__MAX_WAIT_SECONDS: "1" });
    const capClient = new Client(capped.baseUrl);
    const task = await capClient.createTask(ns, "slow_chain", { sleep_ms: 2_000 });
    // The cap holds: one poll of 2 s is refused.
    const refused = await fetch(`${capped.baseUrl}/v1/tasks/${task.id}?wait=2`);
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).error.code, "invalid_wait");

    const started = performance.now();
    const done = await capClient.wait(task, 8_000);
    assert.equal(done.state, "complete");
    assert.ok(performance.now() - started < 8_000);
    assert.deepEqual(done.result, { quick: { attempt: 1, parents: { slow: { slept_ms: 2_000 } } } });
  });

  it("lists tasks page by page, newest first, with no repeats", async () => {
    const created = [];
    for (let value = 0; value < 5; value++) {
      created.push((await client.createTask(ns, "complex_dag", { value })).id);
    }
    const newestFirst = [...created].reverse();

    const sizes = [];
    const listed = [];
    let before;
    for (;;) {
      const page = await client.listTasks({ namespace: ns, name: "complex_dag", limit: 2, before });
      sizes.push(page.tasks.length);
      for (const task of page.tasks) {
        assert.equal(task.name, "complex_dag");
        assert.equal(task.result, null); // lists leave results out
        listed.push(task.id);
      }
      if (page.nextBefore === null) break;
      assert.equal(page.nextBefore, page.tasks.at(-1).id);
      before = page.nextBefore;
    }
    assert.deepEqual(sizes, [2, 2, 1]);
    assert.deepEqual(listed, newestFirst);

    const iterated = [];
    for await (const task of client.iterateTasks({ name: "complex_dag", limit: 2 })) {
      iterated.push(task.id);
    }
    assert.deepEqual(iterated, newestFirst);

    const done = await Promise.all(created.map((id) => client.wait(id, 30_000)));
    assert.deepEqual(
      done.map((t) => t.state),
      created.map(() => "complete"),
    );
    const complete = await client.listTasks({ name: "complex_dag", state: "complete", limit: 500 });
    assert.deepEqual(complete.tasks.map((t) => t.id).sort(), [...created].sort());
    await assert.rejects(client.listTasks({ limit: 0 }), apiError(InvalidRequestError, 400, "invalid_limit"));
  });

  it("cancels a running task, and refuses to cancel a finished one", async () => {
    const slow = await client.createTask(ns, "slow_chain", { sleep_ms: 500 });
    const cancelled = await client.cancel(slow);
    assert.equal(cancelled.state, "cancelled");
    assert.equal((await client.wait(slow, 10_000)).state, "cancelled");
    await assert.rejects(client.cancel(slow), apiError(ConflictError, 409, "task_not_running"));

    const done = await client.wait(await client.createTask(ns, "linear", { value: 2 }), 30_000);
    assert.equal(done.state, "complete");
    await assert.rejects(client.cancel(done.id), apiError(ConflictError, 409, "task_not_running"));
  });

  it("reads a task's steps, whole or a page at a time, and its history", async () => {
    const task = await client.wait(await client.createTask(ns, "linear", { value: 6 }), 30_000);
    assert.equal(task.state, "complete");

    const steps = await client.steps(task);
    assert.deepEqual(
      steps.map((s) => [s.name, s.handler, s.stepType, s.state, s.attempt, s.result]),
      [
        ["double", "double", "standard", "completed", 1, { value: 12 }],
        ["add_ten", "add_ten", "standard", "completed", 1, { value: 22 }],
        ["square", "square", "standard", "completed", 1, { value: 484 }],
        ["halve", "halve", "standard", "completed", 1, { value: 242 }],
      ],
    );
    for (const step of steps) {
      assert.equal(step.error, null);
      assert.equal(typeof step.worker, "string");
      for (const at of [step.createdAt, step.dispatchedAt, step.startedAt, step.finishedAt, step.processedAt]) {
        assert.ok(at instanceof Date && !Number.isNaN(at.getTime()), `${step.name}: ${at}`);
      }
      assert.ok(step.processedAt >= step.startedAt);
    }

    const paged = [];
    let after;
    for (;;) {
      const page = await client.stepsPage(task.id, { after, limit: 1 });
      assert.ok(page.steps.length <= 1);
      paged.push(...page.steps.map((s) => s.id));
      if (page.next === null) break;
      after = page.next;
    }
    assert.deepEqual(
      paged,
      steps.map((s) => s.id),
    );

    const history = await client.history(task);
    assert.deepEqual(
      [history[0].step, history[0].from, history[0].to, history[0].reason],
      [null, null, "running", "created"],
    );
    const last = history.at(-1);
    assert.deepEqual([last.step, last.from, last.to], [null, "running", "complete"]);
    for (const name of ["double", "add_ten", "square", "halve"]) {
      assert.ok(history.some((h) => h.step === name && h.to === "completed" && h.attempt === 1), name);
    }
    for (let i = 1; i < history.length; i++) {
      assert.ok(history[i].at >= history[i - 1].at);
      assert.equal(history[i].by, null);
    }
  });

  it("retries and resolves a task that failed, recording who and why", async () => {
    const failed = await client.wait(await client.createTask(ns, "permanent_failure", {}), 30_000);
    assert.equal(failed.state, "error");
    assert.equal(failed.error.step, "doomed");
    assert.equal(failed.error.error.kind, "validation");
    assert.equal(failed.error.error.message, "input rejected for good");

    const retried = await client.retry(failed, { by: "user:ts-test", reason: "try again" });
    assert.equal(retried.state, "running");
    // The handler fails for good every time.
    assert.equal((await client.wait(retried, 30_000)).state, "error");

    const resolved = await client.resolve(failed, "doomed", { value: 5 }, { by: "user:ts-test", reason: "by hand" });
    assert.equal(resolved.state, "running");
    const done = await client.wait(resolved, 30_000);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { never: { value: 10 } });

    const history = await client.history(failed);
    assert.ok(history.filter((h) => h.by !== null).every((h) => h.by === "user:ts-test"));
    const repairs = history.filter((h) => h.step === null && h.from === "error");
    assert.deepEqual(
      repairs.map((h) => [h.to, h.reason, h.by]),
      [
        ["running", "retried: try again", "user:ts-test"],
        ["running", "resolved: by hand", "user:ts-test"],
      ],
    );

    await assert.rejects(client.retry(done), apiError(ConflictError, 409, "task_not_failed"));
    await assert.rejects(client.retry(done, { step: "doomed" }), ConflictError);
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

  it("rejects with the API's stable code, by status", async () => {
    const unknown = randomUUID();
    await assert.rejects(client.getTask(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.steps(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.history(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.wait(unknown, 1_000), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.getTask("nope"), apiError(InvalidRequestError, 400, "invalid_id"));
    await assert.rejects(client.createTask(ns, "no_such_template", {}), apiError(NotFoundError, 404, "unknown_template"));
    await assert.rejects(client.createTask(ns, "linear", { value: "six" }), (err) => {
      apiError(InvalidRequestError, 422, "context_schema_violation")(err);
      assert.ok(Array.isArray(err.details) && err.details.length > 0, JSON.stringify(err.details));
      return true;
    });
  });

  it("rejects with a ConnectionError when the orchestrator cannot be reached or does not answer", async () => {
    const closedPort = await freePort();
    const nobody = new Client(`http://127.0.0.1:${closedPort}`);
    await assert.rejects(nobody.getTask(randomUUID()), (err) => {
      assert.ok(err instanceof ConnectionError && err instanceof TaskerClientError);
      assert.ok(!(err instanceof ApiError));
      assert.equal(err.cause.code, "ECONNREFUSED");
      assert.match(err.message, /cannot reach the Tasker API/);
      return true;
    });

    // Accepts connections and never answers.
    const sockets = new Set();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const mute = new Client(`http://127.0.0.1:${silent.address().port}`, { timeoutMs: 300 });
      await assert.rejects(mute.listTasks(), (err) => {
        assert.ok(err instanceof ConnectionError);
        assert.match(err.message, /no answer from the Tasker API within 300 ms/);
        return true;
      });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }

    assert.throws(() => new Client("ftp://example.com"), TaskerClientError);
  });

  it("rejects a wait with the reason of the caller's abort signal", async () => {
    const task = await client.createTask(ns, "slow_chain", { sleep_ms: 1_000 });
    const signal = AbortSignal.timeout(200);
    await assert.rejects(client.wait(task, 30_000, { signal }), (err) => err === signal.reason);
    assert.equal((await client.wait(task, 30_000)).state, "complete");
  });

  it("reaches an https:// orchestrator with a private CA, and sends its token", async (t) => {
    // The throwaway CA and localhost certificate cargo-make/services.sh makes for the local services.
    const tls = path.join(process.env.TASKER_HOME ?? path.join(repoRoot, ".tasker"), "tls");
    const [ca, cert, key] = ["ca.pem", "server.pem", "server.key"].map((f) => path.join(tls, f));
    if (![ca, cert, key].every((f) => fs.existsSync(f))) {
      t.skip(`no TLS material in ${tls} (cargo-make/services.sh start makes it)`);
      return;
    }
    const reader = orchestrator.createToken("ts-reader", "read");
    const writer = orchestrator.createToken("ts-writer", "write");
    const secure = await orchestrator.peer({
      TASKER_ORCHESTRATOR__TLS_CERT_FILE: cert,
      TASKER_ORCHESTRATOR__TLS_KEY_FILE: key,
      TASKER_ORCHESTRATOR__AUTH: "tokens",
    });
    assert.match(secure.baseUrl, /^https:/);

    // Node's own roots do not include the private CA.
    await assert.rejects(new Client(secure.baseUrl, { token: reader }).listTasks(), (err) => {
      assert.ok(err instanceof ConnectionError, `${err}`);
      assert.match(err.message, /certificate/);
      return true;
    });
    await assert.rejects(
      new Client(secure.baseUrl, { tlsCaFile: ca }).listTasks(),
      apiError(AuthError, 401, "unauthenticated"),
    );
    const reading = new Client(secure.baseUrl, { tlsCaFile: ca, token: reader });
    assert.ok(Array.isArray((await reading.listTasks({ limit: 1 })).tasks));
    await assert.rejects(reading.createTask(ns, "linear", { value: 6 }), apiError(AuthError, 403, "forbidden"));

    // From the environment, as an app configured by TASKER_* would.
    Object.assign(process.env, { TASKER_URL: secure.baseUrl, TASKER_TOKEN: writer, TASKER_TLS_CA_FILE: ca });
    try {
      const fromEnv = new Client();
      assert.equal(fromEnv.baseUrl, secure.baseUrl);
      const done = await fromEnv.wait(await fromEnv.createTask(ns, "linear", { value: 6 }), 30_000);
      assert.equal(done.state, "complete");
      assert.deepEqual(done.result, { halve: { value: 242 } });
    } finally {
      for (const name of clientVars) delete process.env[name];
    }

    assert.throws(() => new Client(secure.baseUrl, { tlsCaFile: path.join(tls, "missing.pem") }), (err) => {
      assert.ok(err instanceof TaskerClientError);
      assert.match(err.message, /cannot read the CA file/);
      return true;
    });
    assert.throws(
      () => new Client(secure.baseUrl, { tlsCaFile: path.join(packageDir, "package.json") }),
      /holds no PEM certificate/,
    );
  });

  it("runs the example app, which the README shows", async (t) => {
    const ts = require("typescript");
    const source = path.join(packageDir, "examples/submit.ts");
    const readme = fs.readFileSync(path.join(packageDir, "README.md"), "utf8");
    assert.ok(readme.includes(fs.readFileSync(source, "utf8")), "README.md shows examples/submit.ts as it is");

    // Type-checked as an app would be, importing the package by name (its self-reference).
    const outDir = path.join(__dirname, ".examples");
    t.after(() => fs.rmSync(outDir, { recursive: true, force: true }));
    const program = ts.createProgram([source], {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      types: ["node"],
      skipLibCheck: true,
      rootDir: path.dirname(source),
      outDir,
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    assert.deepEqual(diagnostics, []);
    assert.equal(program.emit().emitSkipped, false);

    const { stdout } = await promisify(execFile)(process.execPath, [path.join(outDir, "submit.js"), "6"], {
      env: { ...process.env, TASKER_URL: orchestrator.baseUrl },
      timeout: 60_000,
    });
    assert.equal(stdout, "complete: halve = 242\n");
  });
});

// The time calls' requests and answers against a stand-in for the API (no orchestrator): the
// paths, methods and bodies of the contract, and the values read from its answers.
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
    wait: { kind: "signal", signal: "approved", until: "2026-12-03T09:00:00Z", on_timeout: "fail" },
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
  const requests = [];
  const base = standIn(answers, (req, text) =>
    requests.push([req.method, req.url, text === "" ? null : JSON.parse(text)]),
  );
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

// A running `linear` task as the API answers it, for the stand-in servers below.
function runningTask(id, created) {
  return {
    id,
    namespace: ns,
    name: "linear",
    version: "1.0.0",
    state: "running",
    context: { value: 6 },
    idempotency_key: null,
    open_steps: 4,
    result: null,
    error: null,
    completed_at: null,
    duration_ms: null,
    run_at: null,
    ...created,
  };
}

// The composition calls against the same kind of stand-in: child tasks and their links, a step's
// namespace, child and unserved flag, the parent filter and the workers listing.
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

// The fair-sharing calls against a stand-in: a task's priority, a throttled step's throttle and
// limits, the concurrency and rate limits, pausing and resuming a rate key, and the conformance
// client's `flow` mode.
describe("Client and the flow API's wire", () => {
  const taskId = "019a0000-0000-7000-8000-000000000001";
  const created = { created_at: "2026-11-26T09:00:00.123456Z" };
  const task = runningTask(taskId, created);
  const step = {
    id: "019a0000-0000-7000-8000-000000000030",
    name: "charge",
    handler: "charge",
    step_type: "standard",
    state: "throttled",
    attempt: 0,
    max_attempts: 3,
    ...created,
    wait: null,
    namespace: ns,
    child: null,
    unserved: false,
    throttle: {
      kind: "rate",
      key: "stripe",
      limit: 100,
      since: "2026-11-26T09:00:00Z",
      until: "2026-11-26T09:00:01.5Z",
    },
    limits: {
      concurrency: { key: `${ns}/charge_customer:c-1`, limit: 2 },
      rate: { key: "stripe", limit: 100, per_ms: 1000, burst: 20 },
    },
  };
  const waiting = {
    ...step,
    id: "019a0000-0000-7000-8000-000000000031",
    throttle: { kind: "concurrency", key: "k", limit: 2, since: "2026-11-26T09:00:00Z", until: null },
    limits: { concurrency: { key: "k", limit: 2 }, rate: null },
  };
  // A step from a server before limits.
  const older = { ...step, id: "019a0000-0000-7000-8000-000000000032", throttle: undefined, limits: undefined };
  const usedAt = "2026-11-26T09:00:00.000Z";
  const concurrencyLimit = { key: `${ns}/charge_customer:c-1`, limit: 2, in_use: 2, throttled: 1, used_at: usedAt };
  const rateLimit = {
    key: "stripe",
    limit: 100,
    per_ms: 1000,
    burst: 20,
    paused_until: null,
    pause_note: null,
    paused_by: null,
    throttled: 3,
    used_at: usedAt,
  };
  const pausedUntil = "2026-11-26T10:00:00.000Z";
  const paused = { ...rateLimit, paused_until: pausedUntil, pause_note: "incident" };
  // A key from a context value: one path segment, percent-encoded.
  const odd = "acct:42/eu";
  const oddPath = "/v1/rate-limits/acct%3A42%2Feu/pause";
  const flowPath = "/v1/rate-limits/conformance-flow/pause";
  const flowPaused = {
    ...paused,
    key: "conformance-flow",
    paused_until: "2026-11-26T10:00:00.123Z",
    pause_note: "conformance",
  };
  const answers = {
    "POST /v1/tasks": [201, { ...task, priority: "high" }],
    [`GET /v1/tasks/${taskId}`]: [200, task],
    [`GET /v1/tasks/${taskId}/steps`]: [200, { steps: [step, waiting, older], next: null }],
    "GET /v1/concurrency-limits": [200, { limits: [concurrencyLimit] }],
    "GET /v1/rate-limits": [200, { limits: [{ ...rateLimit, key: "z" }, rateLimit] }],
    "POST /v1/rate-limits/stripe/pause": [200, paused],
    "DELETE /v1/rate-limits/stripe/pause": [200, rateLimit],
    [`POST ${oddPath}`]: [200, { ...paused, key: odd }],
    [`DELETE ${oddPath}`]: [404, { error: { code: "unknown_rate_limit", message: odd } }],
    [`POST ${flowPath}`]: [200, flowPaused],
    [`DELETE ${flowPath}`]: [200, { ...rateLimit, key: "conformance-flow" }],
  };
  const requests = [];
  const base = standIn(answers, (req, body) =>
    requests.push([req.method, req.url, body === "" ? null : JSON.parse(body)]),
  );
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    requests.length = 0;
    const got = await client.createTask(ns, "linear", { value: 6 }, { priority: "high" });
    assert.equal(got.priority, "high");
    await client.createTask(ns, "linear", { value: 6 });
    // A task from a server before priorities: no priority (null, as every field it leaves out).
    assert.equal((await client.getTask(taskId)).priority, null);

    const [throttled, concurrencyWait, olderStep] = await client.steps(taskId);
    assert.equal(throttled.state, "throttled");
    assert.deepEqual(throttled.throttle, {
      kind: "rate",
      key: "stripe",
      limit: 100,
      since: new Date("2026-11-26T09:00:00Z"),
      until: new Date("2026-11-26T09:00:01.500Z"),
    });
    assert.deepEqual(throttled.limits, {
      concurrency: { key: `${ns}/charge_customer:c-1`, limit: 2 },
      rate: { key: "stripe", limit: 100, perMs: 1000, burst: 20 },
    });
    assert.equal(concurrencyWait.throttle.until, null);
    assert.deepEqual(concurrencyWait.limits, { concurrency: { key: "k", limit: 2 }, rate: null });
    assert.deepEqual([olderStep.throttle, olderStep.limits], [null, null]);

    assert.deepEqual(await client.concurrencyLimits(), [
      { key: `${ns}/charge_customer:c-1`, limit: 2, inUse: 2, throttled: 1, usedAt: new Date(usedAt) },
    ]);
    assert.equal((await client.concurrencyLimits(`${ns}/charge_customer:`)).length, 1);
    const [, rate] = await client.rateLimits();
    assert.deepEqual(rate, {
      key: "stripe",
      limit: 100,
      perMs: 1000,
      burst: 20,
      pausedUntil: null,
      pauseNote: null,
      pausedBy: null,
      throttled: 3,
      usedAt: new Date(usedAt),
    });
    const pausedRate = await client.pauseRateLimit("stripe", new Date(pausedUntil), "incident");
    assert.deepEqual([pausedRate.pausedUntil, pausedRate.pauseNote], [new Date(pausedUntil), "incident"]);
    assert.deepEqual(await client.pauseRateLimit("stripe", "2026-11-26T11:00:00+01:00"), pausedRate);
    assert.deepEqual(await client.resumeRateLimit("stripe"), rate);
    assert.equal((await client.pauseRateLimit(odd, pausedUntil)).key, odd);
    await assert.rejects(client.resumeRateLimit(odd), apiError(NotFoundError, 404, "unknown_rate_limit"));

    assert.deepEqual(requests, [
      ["POST", "/v1/tasks", { namespace: ns, name: "linear", context: { value: 6 }, priority: "high" }],
      ["POST", "/v1/tasks", { namespace: ns, name: "linear", context: { value: 6 } }],
      ["GET", `/v1/tasks/${taskId}`, null],
      ["GET", `/v1/tasks/${taskId}/steps?limit=1000`, null],
      ["GET", "/v1/concurrency-limits", null],
      ["GET", `/v1/concurrency-limits?key=${ns}%2Fcharge_customer%3A`, null],
      ["GET", "/v1/rate-limits", null],
      ["POST", "/v1/rate-limits/stripe/pause", { until: pausedUntil, note: "incident" }],
      ["POST", "/v1/rate-limits/stripe/pause", { until: "2026-11-26T11:00:00+01:00" }],
      ["DELETE", "/v1/rate-limits/stripe/pause", null],
      ["POST", oddPath, { until: pausedUntil }],
      ["DELETE", oddPath, null],
    ]);
  });

  it("conformance-client URL flow prints what it read and did", async () => {
    requests.length = 0;
    const started = Date.now();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [path.join(packageDir, "dist/fixtures/conformance_client.js"), base(), "flow"],
      { timeout: 60_000 },
    );
    const lines = stdout.split("\n").filter((line) => line !== "");
    assert.deepEqual(
      lines.map((line) => line.split(" ")[0]),
      ["rate_limits", "concurrency_limits", "paused", "resumed"],
    );
    const read = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(" ")), JSON.parse(line.slice(line.indexOf(" ") + 1))]),
    );
    assert.deepEqual(read.rate_limits, [rateLimit, { ...rateLimit, key: "z" }]); // by key
    assert.deepEqual(read.concurrency_limits, [concurrencyLimit]);
    assert.deepEqual(read.paused, flowPaused);
    assert.deepEqual(read.resumed, { ...rateLimit, key: "conformance-flow" });
    const [[, , pause]] = requests.filter(([method]) => method === "POST");
    assert.equal(pause.note, "conformance");
    const ahead = new Date(pause.until).getTime() - started;
    assert.ok(ahead > 59 * 60_000 && ahead < 61 * 60_000, pause.until);
    assert.deepEqual(
      requests.map(([method, target]) => [method, target]),
      [
        ["GET", "/v1/rate-limits"],
        ["GET", "/v1/concurrency-limits"],
        ["POST", flowPath],
        ["DELETE", flowPath],
      ],
    );
  });
});

// Bulk create, purge and a purged task against a stand-in, and the conformance client's `scale`
// mode.
describe("Client and the scale API's wire", () => {
  const purgedId = "019a0000-0000-7000-8000-000000000040";
  const purgedPath = `/v1/tasks/${purgedId}`;
  const purged = {
    error: {
      code: "task_purged",
      message: `task ${purgedId} was purged at 2026-11-27T06:00:00Z (retention)`,
      details: { task_id: purgedId, state: "complete", purged_at: "2026-11-27T06:00:00Z" },
    },
  };
  const ids = ["041", "042", "043"].map((n) => `019a0000-0000-7000-8000-000000000${n}`);
  // As the server answers: a refused item has no task_id, a created one no error.
  const batch = {
    created: 2,
    existing: 1,
    refused: 1,
    results: [
      { index: 0, status: "created", task_id: ids[0] },
      { index: 1, status: "created", task_id: ids[1] },
      { index: 2, status: "existing", task_id: ids[2] },
      {
        index: 3,
        status: "refused",
        error: { code: "unknown_template", message: "no template typescript_examples/nope" },
      },
    ],
  };
  const duplicate = {
    error: {
      code: "duplicate_idempotency_key",
      message: "two items share the key k",
      details: { key: "k", indexes: [0, 1] },
    },
  };
  const tooLarge = {
    error: { code: "batch_too_large", message: "10001 tasks, at most 10000", details: { tasks: 10001, limit: 10000 } },
  };
  const purgeAnswer = {
    dry_run: false,
    older_than: "30d",
    before: "2026-10-28T06:00:00Z",
    states: ["complete", "error", "cancelled"],
    tasks: 1234,
    by_state: { complete: 1200, error: 30, cancelled: 4 },
    rows: 45678,
    bytes: 12345678,
    more: false,
  };
  const dryRun = {
    ...purgeAnswer,
    dry_run: true,
    older_than: "1h",
    states: ["complete"],
    by_state: { complete: 3 },
    tasks: 3,
    rows: null,
    bytes: null,
  };
  const invalidState = {
    error: { code: "invalid_state", message: "running is not finished", details: { state: "running" } },
  };
  const retention = {
    complete: "30d",
    error: "90d",
    cancelled: "30d",
    tombstones: "90d",
    interval_ms: 60000,
    batch: 200,
    busy_percent: 5,
    last_purged_at: "2026-11-27T10:02:03.123456Z",
  };
  const refusedItem = {
    index: 2,
    status: "refused",
    error: { code: "unknown_template", message: "no such template" },
  };
  const scaleFirst = { created: 2, existing: 0, refused: 1, results: [...batch.results.slice(0, 2), refusedItem] };
  const scaleSecond = {
    created: 0,
    existing: 2,
    refused: 1,
    results: [...batch.results.slice(0, 2).map((r) => ({ ...r, status: "existing" })), refusedItem],
  };
  // Each test sets the answers of POST /v1/tasks:batch, POST /v1/purge and GET /v1/retention it
  // needs, in turn.
  const answers = {
    ...Object.fromEntries(
      [
        `GET ${purgedPath}`,
        `GET ${purgedPath}/steps`,
        `GET ${purgedPath}/history`,
        `POST ${purgedPath}/cancel`,
        `POST ${purgedPath}/retry`,
        `POST ${purgedPath}/signals/approved`,
        `GET ${purgedPath}/signals`,
      ].map((route) => [route, [410, purged]]),
    ),
  };
  const requests = [];
  const base = standIn(answers, (req, body) =>
    requests.push([req.method, req.url, body === "" ? null : JSON.parse(body)]),
  );
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    requests.length = 0;
    answers["POST /v1/tasks:batch"] = [
      [200, batch],
      [400, duplicate],
      [413, tooLarge],
    ];
    answers["POST /v1/purge"] = [
      [200, purgeAnswer],
      [200, dryRun],
      [400, invalidState],
      [403, { error: { code: "forbidden", message: "an operator's token" } }],
    ];
    const items = [
      { namespace: ns, name: "linear", context: { value: 1 }, idempotencyKey: "k-1" },
      {
        namespace: ns,
        name: "linear",
        context: { value: 2 },
        priority: "high",
        runAt: new Date("2026-11-27T03:30:00+01:00"),
      },
      { namespace: ns, name: "linear", delay: 600, idempotencyKey: "k-3" },
      { namespace: ns, name: "nope", runAt: "2026-11-27T02:30:00Z", delay: "10m", version: "2.0.0" },
    ];
    assert.deepEqual(await client.createTasks(items), {
      created: 2,
      existing: 1,
      refused: 1,
      results: [
        { index: 0, status: "created", taskId: ids[0], error: null },
        { index: 1, status: "created", taskId: ids[1], error: null },
        { index: 2, status: "existing", taskId: ids[2], error: null },
        {
          index: 3,
          status: "refused",
          taskId: null,
          error: { code: "unknown_template", message: "no template typescript_examples/nope", details: null },
        },
      ],
    });
    await assert.rejects(client.createTasks([items[0], items[0]]), (err) => {
      apiError(InvalidRequestError, 400, "duplicate_idempotency_key")(err);
      assert.deepEqual(err.details, { key: "k", indexes: [0, 1] });
      return true;
    });
    await assert.rejects(client.createTasks([items[2]]), (err) => {
      apiError(InvalidRequestError, 413, "batch_too_large")(err);
      assert.deepEqual(err.details, { tasks: 10001, limit: 10000 });
      return true;
    });

    assert.deepEqual(await client.purge({ olderThan: "30d" }), {
      dryRun: false,
      olderThan: "30d",
      before: new Date("2026-10-28T06:00:00Z"),
      states: ["complete", "error", "cancelled"],
      tasks: 1234,
      byState: { complete: 1200, error: 30, cancelled: 4 },
      rows: 45678,
      bytes: 12345678,
      more: false,
    });
    const would = await client.purge({ olderThan: "1h", states: ["complete"], dryRun: true, limit: 500 });
    assert.deepEqual(
      [would.dryRun, would.tasks, would.byState, would.rows, would.bytes],
      [true, 3, { complete: 3 }, null, null],
    );
    await assert.rejects(client.purge({ olderThan: "30d", states: ["running"] }), (err) => {
      apiError(InvalidRequestError, 400, "invalid_state")(err);
      assert.deepEqual(err.details, { state: "running" });
      return true;
    });
    await assert.rejects(client.purge({ olderThan: "30d" }), apiError(AuthError, 403, "forbidden"));

    const wire = [
      { namespace: ns, name: "linear", context: { value: 1 }, idempotency_key: "k-1" },
      // A Date in UTC, as createTask sends it.
      { namespace: ns, name: "linear", context: { value: 2 }, run_at: "2026-11-27T02:30:00.000Z", priority: "high" },
      { namespace: ns, name: "linear", idempotency_key: "k-3", delay: "600s" },
      { namespace: ns, name: "nope", version: "2.0.0", run_at: "2026-11-27T02:30:00Z", delay: "10m" },
    ];
    assert.deepEqual(requests, [
      ["POST", "/v1/tasks:batch", { tasks: wire }],
      ["POST", "/v1/tasks:batch", { tasks: [wire[0], wire[0]] }],
      ["POST", "/v1/tasks:batch", { tasks: [wire[2]] }],
      // Only the fields given; dry_run always.
      ["POST", "/v1/purge", { older_than: "30d", dry_run: false }],
      ["POST", "/v1/purge", { older_than: "1h", states: ["complete"], dry_run: true, limit: 500 }],
      ["POST", "/v1/purge", { older_than: "30d", states: ["running"], dry_run: false }],
      ["POST", "/v1/purge", { older_than: "30d", dry_run: false }],
    ]);
  });

  it("reads the retention policy", async () => {
    requests.length = 0;
    answers["GET /v1/retention"] = [
      [200, retention],
      [200, { ...retention, complete: "never", tombstones: "1h30m", busy_percent: 100, last_purged_at: null }],
      [401, { error: { code: "unauthorized", message: "a valid API token" } }],
    ];
    assert.deepEqual(await client.retention(), {
      complete: "30d",
      error: "90d",
      cancelled: "30d",
      tombstones: "90d",
      intervalMs: 60000,
      batch: 200,
      busyPercent: 5,
      lastPurgedAt: new Date("2026-11-27T10:02:03.123Z"),
      // Absent from this (older) answer.
      audit: null,
    });
    assert.deepEqual(await client.retention(), {
      complete: "never",
      error: "90d",
      cancelled: "30d",
      tombstones: "1h30m",
      intervalMs: 60000,
      batch: 200,
      busyPercent: 100,
      lastPurgedAt: null,
      audit: null,
    });
    await assert.rejects(client.retention(), apiError(AuthError, 401, "unauthorized"));
    // A plain GET, no query, no body.
    assert.deepEqual(requests, Array(3).fill(["GET", "/v1/retention", null]));
  });

  it("rejects every call on a purged task with a TaskPurgedError, and a wait at once", async () => {
    const isPurged = (err) => {
      apiError(TaskPurgedError, 410, "task_purged")(err);
      assert.ok(err instanceof NotFoundError);
      assert.deepEqual(err.details, purged.error.details);
      assert.match(err.message, new RegExp(`^task ${purgedId} was purged at `));
      return true;
    };
    for (const call of [
      () => client.getTask(purgedId),
      () => client.steps(purgedId),
      () => client.history(purgedId),
      () => client.cancel(purgedId),
      () => client.retry(purgedId),
      () => client.signal(purgedId, "approved"),
      () => client.signals(purgedId),
    ]) {
      await assert.rejects(call(), isPurged);
    }
    // wait stops at the first answer: one request, no retry, no waiting out its timeout.
    requests.length = 0;
    const started = performance.now();
    await assert.rejects(client.wait(purgedId, 60_000), isPurged);
    assert.ok(performance.now() - started < 5_000);
    assert.deepEqual(
      requests.map(([method, target]) => [method, target.split("?")[0]]),
      [["GET", purgedPath]],
    );
  });

  it("conformance-client URL scale prints what it did", async () => {
    requests.length = 0;
    answers["POST /v1/tasks:batch"] = [
      [200, scaleFirst],
      [200, scaleSecond],
    ];
    answers["POST /v1/purge"] = [200, dryRun];
    answers["GET /v1/retention"] = [200, retention];
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        path.join(packageDir, "dist/fixtures/conformance_client.js"),
        base(),
        "scale",
        ns,
        "linear",
        '{"value": 6}',
        "conformance-scale-7",
      ],
      { timeout: 60_000 },
    );
    assert.deepEqual(stdout.split("\n"), [
      'first ["created","created","refused:unknown_template"]',
      'second ["existing","existing","refused:unknown_template"]',
      'purge {"dry_run":true,"states":["complete"],"more":false,"rows":null}',
      'retention {"complete":"30d","error":"90d","cancelled":"30d","busy_percent":5}',
      "",
    ]);
    const items = {
      tasks: [
        { namespace: ns, name: "linear", context: { value: 6 }, idempotency_key: "conformance-scale-7-1" },
        { namespace: ns, name: "linear", context: { value: 6 }, idempotency_key: "conformance-scale-7-2" },
        { namespace: ns, name: "no_such_template", idempotency_key: "conformance-scale-7-3" },
      ],
    };
    assert.deepEqual(requests, [
      ["POST", "/v1/tasks:batch", items],
      ["POST", "/v1/tasks:batch", items],
      ["POST", "/v1/purge", { older_than: "1h", states: ["complete"], dry_run: true }],
      ["GET", "/v1/retention", null],
    ]);
  });
});

// Integers beyond ±(2^53 − 1) against a stand-in answering with raw JSON text: read as BigInt
// (JSON.parse would round 9007199254740993 to 9007199254740992), and a BigInt sent as a bare
// integer (JSON.stringify would throw).
describe("Client and big integers", () => {
  const taskId = "019a0000-0000-7000-8000-000000000031";
  const big = "9007199254740993";
  const taskJson = (context) =>
    `{"id":"${taskId}","namespace":"${ns}","name":"linear","version":"1.0.0","state":"complete",` +
    `"context":${context},"idempotency_key":null,"open_steps":0,` +
    `"result":{"halve":{"value":${big},"neg":-${big},"note":"${big}","ratio":1.5e300}},"error":null,` +
    `"created_at":"2026-11-26T09:00:00Z","completed_at":"2026-11-26T09:00:01Z","duration_ms":1000,"run_at":null}`;
  const stepJson =
    `{"id":"019a0000-0000-7000-8000-000000000032","name":"halve","handler":"halve","step_type":"standard",` +
    `"state":"completed","attempt":1,"max_attempts":3,"result":{"value":${big}},"error":null,` +
    `"created_at":"2026-11-26T09:00:00Z"}`;
  const bodies = [];
  let server;
  let client;

  before(async () => {
    server = http.createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      bodies.push(text);
      const route = `${req.method} ${req.url.split("?")[0]}`;
      let status = 200;
      let answer;
      if (route === "POST /v1/tasks") {
        // The context as sent, echoed.
        status = 201;
        answer = taskJson(text.match(/"context":(\{[^}]*\})/)[1]);
      } else if (route === `GET /v1/tasks/${taskId}`) {
        answer = taskJson(`{"id":${big}}`);
      } else if (route === `GET /v1/tasks/${taskId}/steps`) {
        answer = `{"steps":[${stepJson}],"next":null}`;
      } else {
        status = 422;
        answer = `{"error":{"code":"invalid_result","message":"no","details":{"limit":-${big}}}}`;
      }
      res.writeHead(status, { "content-type": "application/json" });
      res.end(answer);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    client = new Client(`http://127.0.0.1:${server.address().port}`);
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads them as BigInt and sends BigInt as exact integers", async () => {
    const task = await client.getTask(taskId);
    assert.deepEqual(task.context, { id: 9007199254740993n });
    assert.deepEqual(task.result, {
      halve: { value: 9007199254740993n, neg: -9007199254740993n, note: big, ratio: 1.5e300 },
    });
    assert.equal(task.durationMs, 1000);
    const [step] = await client.steps(taskId);
    assert.deepEqual(step.result, { value: 9007199254740993n });

    const created = await client.createTask(ns, "linear", { id: 9007199254740993n, small: 5 });
    assert.equal(bodies.at(-1), `{"namespace":"${ns}","name":"linear","context":{"id":${big},"small":5}}`);
    assert.deepEqual(created.context, { id: 9007199254740993n, small: 5 });

    await assert.rejects(client.resolve(taskId, "halve", { value: -9007199254740993n }), (err) => {
      assert.ok(err instanceof InvalidRequestError);
      assert.deepEqual(err.details, { limit: -9007199254740993n });
      return true;
    });
    assert.equal(bodies.at(-1), `{"result":{"value":-${big}}}`);
  });
});
