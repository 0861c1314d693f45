"use strict";
// The step stream calls (`readStream`, `stream`) against stand-ins: a page read from the API's
// JSON, and Server-Sent Events from a node:http server whose connections drop mid-way, close
// before the end or answer errors: the resume with `last-event-id`, no gap and no duplicate.
// streams_live.test.js reads the streams of a real orchestrator.
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const http = require("node:http");

const { ApiError, Client, NotFoundError, TaskPurgedError, TaskerClientError } = require("../dist/index.js");
const { apiError } = require("./support/answers.js");
const { recordedStandIn } = require("./support/stand_in.js");

const taskId = "019a0000-0000-7000-8000-0000000000f1";
const stepId = "019a0000-0000-7000-8000-0000000000f2";
// A child task (a `child:` step's) of the stream's task: its chunks come with children=true.
const childId = "019a0000-0000-7000-8000-0000000000f3";
const childStepId = "019a0000-0000-7000-8000-0000000000f4";
const parentId = "019a0000-0000-7000-8000-0000000000f5";
const route = `/v1/tasks/${taskId}/stream`;

/** A chunk as the API writes it: `text` t<offset> unless given, of attempt 1, of the task's own step. */
function chunk(offset, fields = {}) {
  return {
    offset,
    task_id: taskId,
    step_id: stepId,
    step: "generate",
    attempt: 1,
    seq: offset,
    topic: "tokens",
    text: `t${offset}`,
    end: false,
    retry: false,
    at: "2026-11-30T22:00:00.123Z",
    ...fields,
  };
}

describe("Client and the stream API's page", () => {
  const { requests, base } = recordedStandIn({
    [`GET ${route}`]: [
      [200, { task_id: taskId, chunks: [chunk(2), { ...chunk(3), text: undefined, data: { pct: 40 } }], next: 4, complete: false }],
      [200, { task_id: taskId, chunks: [{ ...chunk(4, { end: true }), text: undefined }], next: 5, complete: true }],
    ],
    [`GET /v1/tasks/${parentId}/stream`]: [
      // As read with children=true: the task's own chunk, then its child task's.
      200,
      {
        task_id: parentId,
        chunks: [chunk(0, { task_id: parentId }), chunk(1, { task_id: childId, step_id: childStepId, step: "draft" })],
        next: 2,
        complete: true,
      },
    ],
    [`GET /v1/tasks/${stepId}/stream`]: [404, { error: { code: "task_not_found", message: "no such task" } }],
  });

  it("reads a page with the query the contract describes", async () => {
    const client = new Client(base());
    const page = await client.readStream(taskId, { from: 2, topic: "tokens", limit: 2 });
    assert.deepEqual(page, {
      taskId,
      next: 4,
      complete: false,
      chunks: [
        {
          offset: 2,
          taskId,
          stepId,
          step: "generate",
          attempt: 1,
          seq: 2,
          topic: "tokens",
          text: "t2",
          data: null,
          end: false,
          retry: false,
          at: new Date("2026-11-30T22:00:00.123Z"),
        },
        { ...page.chunks[1], offset: 3, seq: 3, text: null, data: { pct: 40 } },
      ],
    });
    const last = await client.readStream({ id: taskId });
    assert.equal(last.complete, true);
    assert.deepEqual([last.chunks[0].end, last.chunks[0].text], [true, null]);
    await assert.rejects(client.readStream(stepId), apiError(NotFoundError, 404, "task_not_found"));
    assert.deepEqual(
      requests.map(([method, url]) => `${method} ${url}`),
      [
        `GET ${route}?from=2&topic=tokens&limit=2`,
        `GET ${route}?from=0`,
        `GET /v1/tasks/${stepId}/stream?from=0`,
      ],
    );
  });

  it("asks for the child tasks' chunks only when `children` is true, and tells whose each chunk is", async () => {
    const client = new Client(base());
    requests.length = 0;
    const page = await client.readStream(parentId, { from: 0, limit: 10, children: true });
    assert.equal(page.taskId, parentId);
    assert.deepEqual(
      page.chunks.map((c) => [c.offset, c.taskId, c.stepId, c.step]),
      [
        [0, parentId, stepId, "generate"],
        [1, childId, childStepId, "draft"],
      ],
    );
    await client.readStream(parentId, { children: false });
    await client.readStream({ id: parentId }, { topic: "tokens" });
    const route = `/v1/tasks/${parentId}/stream`;
    assert.deepEqual(
      requests.map(([method, url]) => `${method} ${url}`),
      [`GET ${route}?from=0&limit=10&children=true`, `GET ${route}?from=0`, `GET ${route}?from=0&topic=tokens`],
    );
  });
});

// --- Server-Sent Events ------------------------------------------------------------------------

function event(c, newline = "\n") {
  return `event: chunk\nid: ${c.offset}\ndata: ${JSON.stringify(c)}\n\n`.replaceAll("\n", newline);
}

const END = 'event: end\ndata: {"next": 6}\n\n';
const eventStream = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** Chunks 0, 1 (split across writes) and 2 after a keep-alive, then half of chunk 3: the connection drops. */
function dropsAfterThree(_req, res) {
  res.writeHead(200, eventStream);
  res.write(`: keep-alive\n\n${event(chunk(0))}`);
  const one = event(chunk(1));
  res.write(one.slice(0, 17));
  res.write(one.slice(17) + event(chunk(2)));
  res.write("event: chunk\nid: 3\n", () => res.socket.destroy());
}

/** Chunk 2 again (skipped), 3 (the step's retry) and 4, with CR LF line ends; then the body ends without `end`. */
function closesBeforeTheEnd(_req, res) {
  res.writeHead(200, eventStream);
  res.write(event(chunk(2), "\r\n") + event(chunk(3, { text: "r0", attempt: 2, seq: 0, retry: true }), "\r\n"));
  res.end(event(chunk(4, { text: "r1", attempt: 2, seq: 1 }), "\r\n"));
}

/** The attempt's end chunk and the `end` event, the connection held open: the stream must end at the event. */
function ends(_req, res) {
  res.writeHead(200, eventStream);
  res.write(event(chunk(5, { text: undefined, end: true, attempt: 2, seq: 2 })) + END);
}

function json(status, body) {
  return (_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/**
 * A stand-in for the stream route, up for the describe block: `serve(acts)` has each connection
 * answered by the next act (the last one again once the others are used) and keeps its request
 * (`url` and headers) in the `requests` it returns.
 */
function sseStandIn() {
  let server;
  let acts = [];
  let requests = [];
  const stand = { url: undefined };
  before(async () => {
    server = http.createServer((req, res) => {
      requests.push({ url: req.url, headers: req.headers });
      (acts.length > 1 ? acts.shift() : acts[0])(req, res);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    stand.url = `http://127.0.0.1:${server.address().port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  stand.serve = (next) => {
    acts = next;
    requests = [];
    return requests;
  };
  return stand;
}

async function collect(iterable) {
  const found = [];
  for await (const item of iterable) found.push(item);
  return found;
}

describe("Client and the stream API's events", () => {
  const stand = sseStandIn();

  it("resumes after a drop and a close with no gap and no duplicate, and ends at the end event", async () => {
    const requests = stand.serve([dropsAfterThree, closesBeforeTheEnd, ends]);
    const client = new Client(stand.url, { token: "s3cret" });
    const started = performance.now();
    const chunks = await collect(client.stream(taskId, { topic: "tokens" }));
    assert.ok(performance.now() - started < 5_000, "the stream did not end at the end event");
    assert.deepEqual(
      chunks.map((c) => c.offset),
      [0, 1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      chunks.map((c) => c.text),
      ["t0", "t1", "t2", "r0", "r1", null],
    );
    assert.deepEqual(
      chunks.map((c) => c.retry),
      [false, false, false, true, false, false],
    );
    assert.deepEqual(
      chunks.slice(3).map((c) => [c.attempt, c.seq, c.end]),
      [
        [2, 0, false],
        [2, 1, false],
        [2, 2, true],
      ],
    );
    assert.ok(chunks[0].at instanceof Date);
    assert.ok(chunks.every((c) => c.taskId === taskId));
    // Each connection after the first resumes after the last offset received.
    assert.deepEqual(
      requests.map((r) => r.headers["last-event-id"]),
      [undefined, "2", "4"],
    );
    for (const { url, headers } of requests) {
      assert.equal(url, `${route}?from=0&topic=tokens`);
      assert.equal(headers.accept, "text/event-stream");
      assert.equal(headers.authorization, "Bearer s3cret");
    }
  });

  it("asks for the child tasks' chunks on every connection when `children` is true", async () => {
    const child = (offset) => chunk(offset, { task_id: childId, step_id: childStepId, step: "draft" });
    const requests = stand.serve([
      // Chunk 0 of the task, 1 of its child, then half of 2: the connection drops.
      (_req, res) => {
        res.writeHead(200, eventStream);
        res.write(event(chunk(0)) + event(child(1)) + "event: chunk\nid: 2\n", () => res.socket.destroy());
      },
      (_req, res) => res.writeHead(200, eventStream).end(event(child(2)) + 'event: end\ndata: {"next": 3}\n\n'),
    ]);
    const chunks = await collect(new Client(stand.url).stream(taskId, { from: 0, children: true }));
    assert.deepEqual(
      chunks.map((c) => [c.offset, c.taskId, c.stepId, c.step]),
      [
        [0, taskId, stepId, "generate"],
        [1, childId, childStepId, "draft"],
        [2, childId, childStepId, "draft"],
      ],
    );
    assert.deepEqual(
      requests.map((r) => [r.url, r.headers["last-event-id"]]),
      [
        [`${route}?from=0&children=true`, undefined],
        [`${route}?from=0&children=true`, "1"],
      ],
    );

    // `children: false` is the default: not asked for.
    const plain = stand.serve([ends]);
    await collect(new Client(stand.url).stream(taskId, { from: 5, children: false }));
    assert.deepEqual(
      plain.map((r) => r.url),
      [`${route}?from=5`],
    );
  });

  it("rejects a chunk that does not say whose task it is of", async () => {
    const { task_id: _gone, ...bare } = chunk(0);
    stand.serve([(_req, res) => res.writeHead(200, eventStream).end(event(bare) + END)]);
    await assert.rejects(collect(new Client(stand.url).stream(taskId)), (err) => {
      assert.ok(err instanceof TaskerClientError && !(err instanceof ApiError));
      assert.match(err.message, /a chunk that is not the API's/);
      return true;
    });
  });

  it("asks for its first offset and rides through a gateway's error", async () => {
    const requests = stand.serve([json(503, { error: { code: "storage_unavailable", message: "restarting" } }), ends]);
    const chunks = await collect(new Client(stand.url).stream({ id: taskId }, { from: 5 }));
    assert.deepEqual(
      chunks.map((c) => c.offset),
      [5],
    );
    assert.deepEqual(
      requests.map((r) => [r.url, r.headers["last-event-id"]]),
      [
        [`${route}?from=5`, undefined],
        [`${route}?from=5`, undefined],
      ],
    );
  });

  it("rejects at once with an answer of the API, or one that is not an event stream", async () => {
    const requests = stand.serve([
      json(410, { error: { code: "task_purged", message: "purged", details: { task_id: taskId } } }),
      json(429, { error: { code: "too_many_streams", message: "as many as it may" } }),
      json(200, { task_id: taskId, chunks: [], next: 0, complete: true }),
    ]);
    const client = new Client(stand.url);
    await assert.rejects(collect(client.stream(taskId)), apiError(TaskPurgedError, 410, "task_purged"));
    await assert.rejects(collect(client.stream(taskId)), apiError(ApiError, 429, "too_many_streams"));
    await assert.rejects(collect(client.stream(taskId)), (err) => {
      assert.ok(err instanceof TaskerClientError && !(err instanceof ApiError));
      assert.match(err.message, /not text\/event-stream/);
      return true;
    });
    assert.equal(requests.length, 3);
  });

  it("closes the connection when the loop is left, and ends with the reason of an aborted signal", async () => {
    let closed;
    const gone = new Promise((resolve) => (closed = resolve));
    stand.serve([
      (req, res) => {
        req.socket.on("close", closed);
        dropsAfterThree(req, res);
      },
    ]);
    const client = new Client(stand.url);
    for await (const c of client.stream(taskId)) {
      if (c.offset === 1) break;
    }
    await gone;

    const abort = new AbortController();
    const reason = new Error("enough");
    stand.serve([(_req, res) => res.writeHead(200, eventStream).write(event(chunk(0)))]);
    const seen = [];
    await assert.rejects(
      (async () => {
        for await (const c of client.stream(taskId, { signal: abort.signal })) {
          seen.push(c.offset);
          abort.abort(reason);
        }
      })(),
      (err) => err === reason,
    );
    assert.deepEqual(seen, [0]);
  });
});
