"use strict";
// Bulk create, purge and a purged task against a stand-in, and the conformance client's `scale`
// mode.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { execFile } = require("node:child_process");
const path = require("node:path");
const { promisify } = require("node:util");

const { AuthError, Client, InvalidRequestError, NotFoundError, TaskPurgedError } = require("../dist/index.js");
const { apiError, ns } = require("./support/answers.js");
const { standIn } = require("./support/stand_in.js");

const packageDir = path.join(__dirname, "..");

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
