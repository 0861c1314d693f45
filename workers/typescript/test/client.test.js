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
  TaskerClientError,
  Worker,
  isTerminal,
} = require("../dist/index.js");
// The fixture templates' handlers, into the default registry the Worker runs.
require("../dist/fixtures/handlers.js");
const { freePort, repoRoot, startOrchestrator } = require("./support/orchestrator.js");
const { apiError, ns } = require("./support/answers.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
const packageDir = path.join(__dirname, "..");

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
