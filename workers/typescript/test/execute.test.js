"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");

const { Registry, PermanentError, RetryableError } = require("../dist/index.js");
const { execute, epochSeconds } = require("../dist/execute.js");
const { outcomeJson } = require("../dist/outcome.js");

function job(handler, overrides = {}) {
  return {
    id: 7,
    task_id: "0190a0a0-0000-7000-8000-000000000001",
    step_id: "0190a0a0-0000-7000-8000-000000000002",
    namespace: "typescript_examples",
    task_name: "t",
    step_name: "s",
    handler,
    attempt: 2,
    max_attempts: 3,
    context: { value: 5 },
    parent_results: { a: { value: 1 } },
    timeout_ms: 5_000,
    ...overrides,
  };
}

async function run(fn, overrides) {
  return execute(new Registry().register("h", fn), job("h", overrides));
}

test("start times have microseconds and stay within the wall clock's millisecond", () => {
  const fractions = new Set();
  for (let i = 0; i < 2_000; i++) {
    const before = Date.now();
    const t = epochSeconds() * 1000;
    const after = Date.now();
    assert.ok(t >= before && t < after + 1, `${t} outside [${before}, ${after + 1})`);
    fractions.add(Math.round((t - Math.floor(t)) * 1000));
  }
  // Date.now() / 1000 has no fraction of a millisecond: one value only.
  assert.ok(fractions.size > 10, `only ${fractions.size} distinct sub-millisecond parts`);
});

test("the context carries the step's fields in camelCase", async () => {
  let seen;
  const out = await run((ctx) => {
    seen = ctx;
    return { ok: true };
  });
  assert.equal(out.status, "success");
  assert.deepEqual(out.result, { ok: true });
  assert.equal(out.id, 7);
  assert.equal(typeof out.started_at, "number");
  assert.ok(out.started_at <= out.finished_at);
  assert.ok(Math.abs(out.finished_at - Date.now() / 1000) < 60, "seconds since the epoch");
  assert.equal(seen.taskId, "0190a0a0-0000-7000-8000-000000000001");
  assert.equal(seen.stepName, "s");
  assert.equal(seen.attempt, 2);
  assert.equal(seen.maxAttempts, 3);
  assert.deepEqual(seen.context, { value: 5 });
  assert.deepEqual(await seen.parentResults.all(), { a: { value: 1 } });
  assert.equal(seen.parentResults.byReference, false);
  assert.equal(seen.input, null);
  assert.equal(seen.timeoutMs, 5_000);
  assert.ok(seen.signal instanceof AbortSignal);
});

test("a batch worker's input reaches the handler", async () => {
  let seen;
  await run((ctx) => (seen = ctx.input), { input: { start: 200, end: 400 } });
  assert.deepEqual(seen, { start: 200, end: 400 });
});

test("sync and async handlers succeed alike; undefined becomes null", async () => {
  assert.deepEqual((await run(() => 3)).result, 3);
  assert.deepEqual((await run(async () => ({ v: [1, "x", null] }))).result, { v: [1, "x", null] });
  const out = await run(() => undefined);
  assert.equal(out.status, "success");
  assert.equal(out.result, null);
  assert.match(outcomeJson(out), /"result":null/);
});

test("PermanentError (and subclasses) fail for good with class, message and backtrace", async () => {
  class InvalidOrder extends PermanentError {}
  for (const [Cls, kind] of [
    [PermanentError, "PermanentError"],
    [InvalidOrder, "InvalidOrder"],
  ]) {
    const out = await run(async () => {
      throw new Cls("input rejected for good");
    });
    assert.equal(out.status, "failure");
    assert.equal(out.retryable, false);
    assert.equal(out.error.kind, kind);
    assert.equal(out.error.message, "input rejected for good");
    assert.match(out.error.backtrace, /execute\.test\.js/);
  }
});

test("a kind given replaces the class name; a RetryableError may ask for its delay", async () => {
  const permanent = await run(() => {
    throw new PermanentError("no such account", { kind: "validation" });
  });
  assert.equal(permanent.retryable, false);
  assert.equal(permanent.error.kind, "validation");
  assert.equal(permanent.retry_after_ms, undefined);
  const later = await run(() => {
    throw new RetryableError("slow down", { kind: "rate_limited", retryAfterMs: 2500 });
  });
  assert.equal(later.retryable, true);
  assert.equal(later.error.kind, "rate_limited");
  assert.equal(later.retry_after_ms, 2500);
  assert.match(outcomeJson(later), /"retry_after_ms":2500/);
  const plain = await run(() => {
    throw new RetryableError("later");
  });
  assert.equal(plain.error.kind, "RetryableError");
  assert.equal(plain.retry_after_ms, undefined);
  assert.throws(() => new RetryableError("x", { retryAfterMs: -1 }), RangeError);
  assert.throws(() => new RetryableError("x", { retryAfterMs: Number.NaN }), RangeError);
});

test("any other error, thrown or rejected, is retryable and reports its class", async () => {
  const sync = await run(() => {
    null.boom();
  });
  assert.equal(sync.retryable, true);
  assert.equal(sync.error.kind, "TypeError");
  assert.match(sync.error.message, /null/);
  assert.match(sync.error.backtrace, /TypeError/);

  class PaymentGatewayDown extends Error {}
  const rejected = await run(() => Promise.reject(new PaymentGatewayDown("503")));
  assert.deepEqual([rejected.retryable, rejected.error.kind, rejected.error.message], [true, "PaymentGatewayDown", "503"]);

  const text = await run(() => {
    throw "plain text";
  });
  assert.deepEqual(text.error, { kind: "Error", message: "plain text" });
});

test("an unknown handler fails permanently with kind unknown_handler", async () => {
  const out = await execute(new Registry(), job("nope"));
  assert.equal(out.status, "failure");
  assert.equal(out.retryable, false);
  assert.equal(out.error.kind, "unknown_handler");
  assert.equal(out.error.message, 'no handler named "nope" is registered in this worker');
});

test("a handler past its timeout fails retryably, its signal aborts and a late rejection is harmless", async () => {
  let signal;
  const out = await run(
    (ctx) =>
      new Promise((_, reject) => {
        signal = ctx.signal;
        ctx.signal.addEventListener("abort", () => reject(new Error("aborted late")));
      }),
    { timeout_ms: 30 },
  );
  assert.equal(out.status, "failure");
  assert.equal(out.retryable, true);
  assert.equal(out.error.kind, "timeout");
  assert.equal(out.error.message, "handler did not finish within 30 ms");
  assert.ok(signal.aborted);
  // The test runner fails the file on an unhandled rejection; give it one turn to surface.
  await new Promise((resolve) => setImmediate(resolve));
});

test("each running job times out at its own deadline, however the others' compare", async () => {
  const hang = () => new Promise(() => {});
  const slowOk = () => new Promise((resolve) => setTimeout(() => resolve("slow"), 120));
  // A long deadline first, then a shorter one that must not wait for it.
  const t0 = performance.now();
  const [long, short] = await Promise.all([run(slowOk, { timeout_ms: 5_000 }), run(hang, { timeout_ms: 30 })]);
  assert.equal(long.status, "success");
  assert.equal(short.error.kind, "timeout");
  // Later jobs still time out, alone and after the earlier ones ended.
  const again = await run(hang, { timeout_ms: 20 });
  assert.equal(again.error.kind, "timeout");
  assert.ok(performance.now() - t0 < 4_000, "no job waited for the 5 s deadline");
  const t1 = performance.now();
  const alone = await run(hang, { timeout_ms: 40 });
  assert.equal(alone.error.kind, "timeout");
  assert.ok(performance.now() - t1 >= 39, "not before its timeout");
});

test("a result that is not JSON fails its own step permanently", async () => {
  const out = await run(() => {
    const cycle = { a: 1 };
    cycle.self = cycle;
    return cycle;
  });
  const wire = JSON.parse(outcomeJson(out));
  assert.equal(wire.status, "failure");
  assert.equal(wire.retryable, false);
  assert.equal(wire.error.kind, "invalid_result");
  assert.match(wire.error.message, /circular/i);
});

test("a BigInt in a result goes to the core marked, for an exact integer", async () => {
  const out = await run(() => ({ big: 9007199254740993n, small: 1 }));
  const wire = JSON.parse(outcomeJson(out));
  assert.equal(wire.status, "success");
  assert.deepEqual(wire.result, { big: "\u0000int:9007199254740993", small: 1 });
});

test("parent results by reference are read a page at a time, or all at once", async () => {
  const pages = { null: { results: '{"a":{"v":1},"b":{"v":2}}', next: "c1" }, c1: { results: '{"c":{"v":3}}', next: null } };
  const asked = [];
  const reader = async (after) => {
    asked.push(after);
    return pages[after];
  };
  const byReference = { parent_results: {}, parent_results_by_reference: true };
  const seen = [];
  const out = await execute(
    new Registry().register("h", async (ctx) => {
      for await (const [name, result] of ctx.parentResults) seen.push([name, result.v, asked.length]);
      return { all: await ctx.parentResults.all(), byReference: ctx.parentResults.byReference };
    }),
    job("h", byReference),
    { pages: reader },
  );
  assert.equal(out.status, "success", JSON.stringify(out));
  // The second page is read only once the first is used up.
  assert.deepEqual(seen, [["a", 1, 1], ["b", 2, 1], ["c", 3, 2]]);
  assert.deepEqual(out.result, { all: { a: { v: 1 }, b: { v: 2 }, c: { v: 3 } }, byReference: true });

  const { ReferenceUnavailable } = require("../dist/index.js");
  const failing = await execute(
    new Registry().register("h", async (ctx) => ctx.parentResults.all()),
    job("h", byReference),
    { pages: () => Promise.reject(new ReferenceUnavailable("orchestrator down")) },
  );
  assert.equal(failing.status, "failure");
  assert.equal(failing.retryable, true);
  assert.equal(failing.error.kind, "reference_unavailable");

  // A failed read is not kept: the next all() reads again.
  let calls = 0;
  const flaky = async (after) => {
    calls += 1;
    if (calls === 1) throw new ReferenceUnavailable("orchestrator down");
    return pages[after];
  };
  const retried = await execute(
    new Registry().register("h", async (ctx) => {
      await assert.rejects(ctx.parentResults.all(), { name: "ReferenceUnavailable" });
      return ctx.parentResults.all();
    }),
    job("h", byReference),
    { pages: flaky },
  );
  assert.equal(retried.status, "success", JSON.stringify(retried));
  assert.deepEqual(retried.result, { a: { v: 1 }, b: { v: 2 }, c: { v: 3 } });
});

test("emit and emitText go to the core, and a refusal throws a StreamError of its kind", async () => {
  const sent = [];
  const emit = (id, topic, payload, text) => {
    sent.push([id, topic, payload, text]);
    return topic === "full" ? ["stream_too_large", "the step's stream would exceed 10 bytes"] : null;
  };
  const out = await execute(
    new Registry().register("h", async (ctx) => {
      ctx.emitText("tokens", "Hel");
      ctx.emit("progress", { pct: 40 });
      assert.throws(() => ctx.emit("progress", 1n), { name: "StreamError" });
      ctx.emitText("full", "x");
      return "unreached";
    }),
    job("h"),
    { emit },
  );
  assert.deepEqual(sent.map((s) => s.slice(1)), [
    ["tokens", "Hel", true],
    ["progress", '{"pct":40}', false],
    ["full", "x", true],
  ]);
  assert.equal(out.status, "failure", JSON.stringify(out));
  assert.equal(out.retryable, false);
  assert.equal(out.error.kind, "stream_too_large");

  // Without a worker (a test of a handler), what it emits is kept on the context.
  const { stepContext } = require("../dist/context.js");
  const ctx = stepContext(job("h"), new AbortController().signal);
  ctx.emitText("tokens", "a");
  ctx.emit("progress", [1]);
  assert.deepEqual(ctx.emitted, [["tokens", "a"], ["progress", [1]]]);
});
