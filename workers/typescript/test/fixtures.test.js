"use strict";
// The fixture handlers compute what tasker-worker-rust/src/handlers.rs computes.
const test = require("node:test");
const assert = require("node:assert/strict");

const { ParentResults, defaultRegistry } = require("../dist/index.js");
require("../dist/fixtures/handlers.js");

function ctx(context, parentResults = {}, attempt = 1) {
  return { context, parentResults: new ParentResults(parentResults), attempt, signal: new AbortController().signal };
}
const call = (name, c) => defaultRegistry().get(name)(c);

test("root steps read context.value, the others sum their parents", async () => {
  assert.deepEqual(await call("double", ctx({ value: 6 })), { value: 12 });
  assert.deepEqual(await call("add_ten", ctx({ value: 6 })), { value: 16 });
  assert.deepEqual(await call("square", ctx({}, { a: { value: 12 } })), { value: 144 });
  assert.deepEqual(await call("sum_parents", ctx({}, { a: { value: 36 }, b: { value: 16 } })), { value: 52 });
  // Rust's i64 division truncates toward zero.
  assert.deepEqual(await call("halve", ctx({ value: -7 })), { value: -3 });
  assert.deepEqual(await call("halve", ctx({ value: 485 })), { value: 242 });
});

test("bad input and overflow are permanent, named by class", async () => {
  await assert.rejects(async () => call("double", ctx({ value: "x" })), { name: "InvalidInput" });
  await assert.rejects(async () => call("sum_parents", ctx({}, { a: { nope: 1 } })), {
    name: "InvalidInput",
    message: "parent `a` has no integer `value`",
  });
  await assert.rejects(async () => call("square", ctx({ value: 2 ** 40 })), { name: "Overflow" });
});

test("route_by_size routes 50 and more to large", async () => {
  assert.deepEqual(await call("route_by_size", ctx({}, { c: { value: 84 } })), { branches: ["large"], value: 84 });
  assert.deepEqual(await call("route_by_size", ctx({}, { c: { value: 14 } })), { branches: ["small"], value: 14 });
});

test("flaky fails retryably until its attempt; echo_attempts echoes", async () => {
  await assert.rejects(async () => call("flaky", ctx({}, {}, 2)), (e) => {
    assert.equal(e.constructor.name, "RetryableError");
    assert.equal(e.kind, "transient");
    assert.equal(e.message, "attempt 2 fails, 3 succeeds");
    return true;
  });
  assert.deepEqual(await call("flaky", ctx({}, {}, 3)), { attempts: 3 });
  assert.deepEqual(await call("flaky", ctx({ succeed_on_attempt: 1 }, {}, 1)), { attempts: 1 });
  assert.deepEqual(await call("echo_attempts", ctx({}, { flaky: { attempts: 3 } }, 1)), {
    attempt: 1,
    parents: { flaky: { attempts: 3 } },
  });
});

test("fail_permanently, panic and sleep", async () => {
  await assert.rejects(async () => call("fail_permanently", ctx({})), {
    name: "PermanentError",
    kind: "validation",
    message: "input rejected for good",
  });
  await assert.rejects(async () => call("panic", ctx({})), { message: "this handler always panics" });
  assert.deepEqual(await call("sleep", ctx({ sleep_ms: 5 })), { slept_ms: 5 });
  const abort = new AbortController();
  const slow = call("sleep", { ...ctx({ sleep_ms: 60_000 }), signal: abort.signal });
  abort.abort();
  await assert.rejects(slow, { name: "AbortError" });
});

test("signal_wait_finish doubles the value and says who approved", async () => {
  const approval = { approval: { approved_by: "conformance" } };
  assert.deepEqual(await call("signal_wait_finish", ctx({ value: 5 }, approval)), {
    value: 10,
    approved_by: "conformance",
  });
  // A payload without the field (or a wait that timed out and continued) approves nobody.
  assert.deepEqual(await call("signal_wait_finish", ctx({ value: 5 }, { approval: { timed_out: true } })), {
    value: 10,
    approved_by: null,
  });
  await assert.rejects(async () => call("signal_wait_finish", ctx({ value: "5" }, approval)), { name: "InvalidInput" });
  await assert.rejects(async () => call("signal_wait_finish", ctx({ value: 2 ** 52 }, approval)), { name: "Overflow" });
});

test("a CSV file outside the fixtures folder is refused", async () => {
  // A task's context names the file: only the fixtures folder (TASKER_CSV_ROOT) may be read.
  await assert.rejects(async () => call("csv_split", ctx({ csv_path: "/etc/passwd" })), {
    name: "InvalidInput",
    message: /must name a file under/,
  });
});

test("pipeline_ingest generates the contract's events; pipeline_sink counts the rows' events", async () => {
  // The same as benches/pipeline_oracle.py (seed 42, 10,000 users).
  const { lines } = await call("pipeline_ingest", ctx({ seed: 42, users: 10000, first: 0, count: 3 }));
  assert.deepEqual(lines, ["0,5122,view,2826", "1,2561,purchase,5726", "2,8215,click,9734"]);
  const later = await call("pipeline_ingest", ctx({ seed: 42, users: 10000, first: 2, count: 1 }));
  assert.deepEqual(later.lines, ["2,8215,click,9734"]);
  assert.deepEqual((await call("pipeline_ingest", ctx({ seed: 42, users: 10000, first: 0, count: 0 }))).lines, []);
  await assert.rejects(async () => call("pipeline_ingest", ctx({ seed: 42, users: 0, first: 0, count: 1 })), {
    name: "InvalidInput",
  });
  const rows = [[2561, 2, 1, 5726], [8215, 0, 2, 16158]];
  assert.deepEqual(await call("pipeline_sink", ctx({}, { aggregate: { rows } })), { rows, events: 3 });
  await assert.rejects(async () => call("pipeline_sink", ctx({}, { aggregate: {} })), { name: "InvalidInput" });
});
