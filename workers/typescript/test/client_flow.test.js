"use strict";
// The fair-sharing calls against a stand-in: a task's priority, a throttled step's throttle and
// limits, the concurrency and rate limits, pausing and resuming a rate key, and the conformance
// client's `flow` mode.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { execFile } = require("node:child_process");
const path = require("node:path");
const { promisify } = require("node:util");

const { Client, NotFoundError } = require("../dist/index.js");
const { apiError, ns, runningTask } = require("./support/answers.js");
const { standIn } = require("./support/stand_in.js");

const packageDir = path.join(__dirname, "..");

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
