"use strict";
// What the client tests against stand-ins share: the fixture namespace, a check of the API's
// errors, and a running task as the API answers it.
const assert = require("node:assert/strict");

const { ApiError, TaskerClientError } = require("../../dist/index.js");

const ns = "typescript_examples";

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

module.exports = { apiError, ns, runningTask };
