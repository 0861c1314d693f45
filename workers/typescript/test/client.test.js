"use strict";
// The API client against a real orchestrator (PostgreSQL, RabbitMQ, target/debug/tasker-orchestrator)
// with the fixture handlers running in an in-process Worker (support/client_cluster.js): tasks
// created, waited for (a peer of the same cluster serves a lower wait cap), listed, cancelled,
// read step by step, retried and resolved, and the example app. The time calls against it are in
// client_time_live.test.js, its errors and https:// in client_errors.test.js.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { execFile } = require("node:child_process");
const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { promisify } = require("node:util");

const { Client, ConflictError, InvalidRequestError } = require("../dist/index.js");
const { clientCluster } = require("./support/client_cluster.js");
const { apiError, ns } = require("./support/answers.js");

const packageDir = path.join(__dirname, "..");

describe("Client", () => {
  const cluster = clientCluster();
  let orchestrator;
  let client;

  before(() => {
    ({ orchestrator, client } = cluster);
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

  it("replays a failed step with the local handler on its recorded inputs", async () => {
    const { replay, replayInputs } = require("../dist/testing.js");
    const failed = await client.wait(await client.createTask(ns, "permanent_failure", { value: 4 }), 30_000);
    assert.equal(failed.state, "error");
    const inputs = await client.stepInputs(failed, "doomed");
    assert.deepEqual([inputs.attempt, inputs.latestAttempt, inputs.state, inputs.context], [1, 1, "failed", { value: 4 }]);
    const replayed = await replay(client, failed.id, "doomed");
    assert.equal(replayed.outcome.kind, "validation");
    assert.equal(replayed.reproduced, true);
    assert.equal((await replayInputs(inputs)).reproduced, true);
    await assert.rejects(client.stepInputs(failed, "doomed", { attempt: 2 }), InvalidRequestError);
    // What `tasker replay … -- node -e 'require("tasker-workflows/testing").main()'` runs.
    const { main } = require("../dist/testing.js");
    const dir = fs.mkdtempSync(path.join(require("node:os").tmpdir(), "replay-"));
    const saved = await client.stepInputs(failed, "doomed");
    const file = path.join(dir, "inputs.json");
    fs.writeFileSync(file, JSON.stringify(require("../dist/testing.js").wireInputs(saved)));
    const logged = [];
    const log = console.log;
    console.log = (line) => logged.push(String(line));
    try {
      assert.equal(await main(["--", file]), 0);
    } finally {
      console.log = log;
      process.exitCode = 0;
      fs.rmSync(dir, { recursive: true });
    }
    assert.match(logged.join("\n"), /doomed \(attempt 1\): failed with validation: input rejected for good/);
    assert.match(logged.join("\n"), /reproduced/);
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

  it("rejects a wait with the reason of the caller's abort signal", async () => {
    const task = await client.createTask(ns, "slow_chain", { sleep_ms: 1_000 });
    const signal = AbortSignal.timeout(200);
    await assert.rejects(client.wait(task, 30_000, { signal }), (err) => err === signal.reason);
    assert.equal((await client.wait(task, 30_000)).state, "complete");
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
