"use strict";
// The step stream calls against a real orchestrator (PostgreSQL, RabbitMQ,
// target/debug/tasker-orchestrator): a task's chunks followed as they come and read a page at a
// time, a step's retry marked, a parent's stream with its child task's merged in (`children`), an
// unknown task refused. The templates and their handlers are this
// file's own (below), run by an in-process Worker; the handlers emit with `ctx.emitText` (the
// worker's side of step streams).
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const { Client, InvalidRequestError, NotFoundError, Registry, RetryableError, Worker } = require("../dist/index.js");
const { apiError } = require("./support/answers.js");
const { startOrchestrator } = require("./support/orchestrator.js");

const ns = "typescript_streams";
const texts = ["t0", "t1", "t2", "t3", "t4"];
const templates = {
  "stream.yaml": `namespace: ${ns}
name: stream
version: 1.0.0
description: One step that emits \`count\` text chunks (default 5) on the topic \`tokens\`
steps:
  - name: generate
    handler: stream_emitter
`,
  "stream_retry.yaml": `namespace: ${ns}
name: stream_retry
version: 1.0.0
description: One step that emits a chunk, fails its first attempt and emits again on its second
steps:
  - name: generate
    handler: stream_retrier
    retry: { max_attempts: 2, backoff: none }
`,
  "stream_parent.yaml": `namespace: ${ns}
name: stream_parent
version: 1.0.0
description: Streams \`count\` chunks, then starts a child task (stream) that streams \`kid\`
steps:
  - name: say
    handler: stream_emitter
  - name: kid
    depends_on: [say]
    child:
      template: stream
      context: { count: /context/kid }
`,
};

const registry = new Registry()
  // `stream_emitter`: the stream fixture handler every language's tests assume: `count` (from the
  // task's context, default 5) text chunks on the topic `tokens` with the text t<i>, then
  // { emitted: count }. `delay_ms` (default 0) between chunks lets a reader follow them live.
  .register("stream_emitter", async (ctx) => {
    const count = ctx.context.count ?? 5;
    for (let i = 0; i < count; i++) {
      if (ctx.context.delay_ms) await new Promise((resolve) => setTimeout(resolve, ctx.context.delay_ms));
      ctx.emitText("tokens", `t${i}`);
    }
    return { emitted: count };
  })
  .register("stream_retrier", async (ctx) => {
    ctx.emitText("tokens", `attempt ${ctx.attempt}`);
    if (ctx.attempt === 1) throw new RetryableError("once more", { kind: "transient" });
    return { attempt: ctx.attempt };
  });

async function collect(iterable) {
  const found = [];
  for await (const item of iterable) found.push(item);
  return found;
}

const textsOf = (chunks) => chunks.filter((c) => !c.end).map((c) => c.text);

describe("Client and a real orchestrator's step streams", () => {
  let dir;
  let orchestrator;
  let worker;
  let running;
  let client;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "tasker-stream-templates-"));
    for (const [name, yaml] of Object.entries(templates)) fs.writeFileSync(path.join(dir, name), yaml);
    orchestrator = await startOrchestrator({ templates: dir, namespaces: [ns] });
    Object.assign(process.env, orchestrator.env);
    worker = Worker.start({ templates: dir, healthPort: 0, concurrency: 4, registry });
    running = worker.run();
    client = new Client(orchestrator.baseUrl);
  });

  after(async () => {
    await worker?.stop();
    await running;
    await orchestrator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("follows a task's stream to its end and reads it a page at a time", async () => {
    const task = await client.createTask(ns, "stream", { count: 5 });
    // The stream ends once the task has ended and its step's stream has: every chunk is kept.
    const followed = await collect(client.stream(task));
    assert.deepEqual(textsOf(followed), texts);
    const done = await client.wait(task, 60_000);
    assert.equal(done.state, "complete");
    assert.deepEqual(done.result, { generate: { emitted: 5 } });

    const page = await client.readStream(task);
    assert.equal(page.taskId, task.id);
    assert.equal(page.complete, true);
    assert.equal(page.next, page.chunks.length);
    assert.deepEqual(page.chunks, followed);
    // Dense offsets from 0; the attempt's chunks in order, its end chunk last.
    assert.deepEqual(
      page.chunks.map((c) => c.offset),
      page.chunks.map((_, i) => i),
    );
    const emitted = page.chunks.filter((c) => !c.end);
    assert.deepEqual(
      emitted.map((c) => c.seq),
      [0, 1, 2, 3, 4],
    );
    for (const c of emitted) {
      assert.deepEqual([c.step, c.attempt, c.topic, c.data, c.retry], ["generate", 1, "tokens", null, false]);
      assert.match(c.stepId, /^[0-9a-f-]{36}$/);
      assert.equal(c.taskId, task.id);
      assert.ok(c.at instanceof Date && !Number.isNaN(c.at.getTime()));
    }
    assert.deepEqual([page.chunks.at(-1).end, page.chunks.at(-1).text], [true, null]);

    const two = await client.readStream(task.id, { from: 1, limit: 2 });
    assert.deepEqual([two.chunks.map((c) => c.offset), two.next], [[1, 2], 3]);
    const rest = await client.readStream(task.id, { from: page.next });
    assert.deepEqual([rest.chunks, rest.next, rest.complete], [[], page.next, true]);
    assert.deepEqual(textsOf((await client.readStream(task, { topic: "tokens" })).chunks), texts);
    assert.deepEqual(textsOf((await client.readStream(task, { topic: "no_such_topic" })).chunks), []);
    assert.deepEqual(
      (await collect(client.stream(task, { from: 3 }))).map((c) => c.offset),
      page.chunks.slice(3).map((c) => c.offset),
    );
  });

  it("yields a running task's chunks as they come", async () => {
    const task = await client.createTask(ns, "stream", { count: 5, delay_ms: 200 });
    const seen = [];
    for await (const c of client.stream(task, { topic: "tokens" })) {
      // Read while the task runs: its step has not finished when the first chunk comes.
      if (!c.end) seen.push([c.text, (await client.getTask(task)).state]);
    }
    assert.deepEqual(
      seen.map(([text]) => text),
      texts,
    );
    assert.equal(seen[0][1], "running");
    assert.equal((await client.wait(task, 60_000)).state, "complete");
  });

  it("marks the first chunk of a step's new attempt as its retry", async () => {
    const task = await client.createTask(ns, "stream_retry", {});
    const chunks = (await collect(client.stream(task))).filter((c) => !c.end);
    assert.deepEqual(
      chunks.map((c) => [c.text, c.attempt, c.retry]),
      [
        ["attempt 1", 1, false],
        ["attempt 2", 2, true],
      ],
    );
    assert.deepEqual((await client.wait(task, 60_000)).result, { generate: { attempt: 2 } });
  });

  it("merges a child task's chunks into its parent's stream when asked, each saying its task", async () => {
    const task = await client.createTask(ns, "stream_parent", { count: 2, kid: 3 });
    // Followed live from the start: both tasks' chunks, at dense offsets of the parent's stream.
    const live = await collect(client.stream(task, { children: true }));
    assert.deepEqual(
      live.map((c) => c.offset),
      live.map((_, i) => i),
    );
    assert.equal((await client.wait(task, 60_000)).state, "complete");
    const kid = (await client.getTask(task)).children.find((c) => c.stepName === "kid").taskId;
    assert.notEqual(kid, task.id);
    const textsOfTask = (chunks, id) => textsOf(chunks.filter((c) => c.taskId === id));
    assert.deepEqual(textsOfTask(live, task.id), ["t0", "t1"]);
    assert.deepEqual(textsOfTask(live, kid), ["t0", "t1", "t2"]);
    assert.deepEqual(new Set(live.map((c) => c.taskId)), new Set([task.id, kid]));
    assert.equal(live.filter((c) => c.end).length, 2);
    // The same a page at a time once it ended.
    const page = await client.readStream(task, { children: true });
    assert.deepEqual([page.chunks, page.next, page.complete], [live, live.length, true]);
    // Without `children`: the parent's own chunks only (its offsets still count the child's).
    const own = await client.readStream(task);
    assert.ok(own.chunks.every((c) => c.taskId === task.id));
    assert.deepEqual(textsOf(own.chunks), ["t0", "t1"]);
    assert.deepEqual([own.next, own.complete], [live.length, true]);
    // The child's own stream: its chunks, each of it.
    const kids = await client.readStream(kid, { children: true });
    assert.deepEqual(textsOf(kids.chunks), ["t0", "t1", "t2"]);
    assert.ok(kids.chunks.every((c) => c.taskId === kid));
  });

  it("refuses an unknown task at once", async () => {
    const unknown = "019a0000-0000-7000-8000-00000000dead";
    await assert.rejects(collect(client.stream(unknown)), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.readStream("not-an-id"), apiError(InvalidRequestError, 400, "invalid_id"));
  });
});
