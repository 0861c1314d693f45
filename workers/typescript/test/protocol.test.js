"use strict";
// The worker protocol check, the same in every language (tests/slow/conformance.rs runs it through
// conformance-protocol): the examples of tests/conformance/protocol.json against the schema
// tasker-worker/protocol.schema.json; the step context made from each job; the outcome this
// package encodes for each case's handler; the start options Worker.start sends.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const Ajv = require("ajv");

const { Registry, PermanentError, RetryableError, Worker } = require("../dist/index.js");
const { execute } = require("../dist/execute.js");
const { stepContext } = require("../dist/context.js");
const { outcomeJson } = require("../dist/outcome.js");
const { startOptions } = require("../dist/worker.js");

const root = path.join(__dirname, "../../..");
const schema = JSON.parse(fs.readFileSync(path.join(root, "tasker-worker/protocol.schema.json"), "utf8"));
const examples = JSON.parse(fs.readFileSync(path.join(root, "tests/conformance/protocol.json"), "utf8"));
const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema(schema);

/** The validator of one definition: job, outcome or start_options. */
function validator(name) {
  const validate = ajv.getSchema(`${schema.$id}#/definitions/${name}`);
  assert.ok(validate, `no definition ${name}`);
  return validate;
}

function assertValid(name, value) {
  const validate = validator(name);
  assert.ok(validate(value), `${name} ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`);
}

/** `got` has every field `want` gives, equal (objects compared the same way). */
function matches(got, want) {
  if (got && want && typeof got === "object" && typeof want === "object" && !Array.isArray(want)) {
    return Object.entries(want).every(([k, v]) => k in got && matches(got[k], v));
  }
  return JSON.stringify(got) === JSON.stringify(want);
}

function handlerFor(behaviour) {
  return () => {
    switch (behaviour.raises) {
      case undefined:
        return behaviour.returns;
      case "permanent":
        throw new PermanentError(behaviour.message, { kind: behaviour.kind });
      case "retryable":
        throw new RetryableError(behaviour.message, { kind: behaviour.kind, retryAfter: behaviour.retry_after });
      default:
        throw new TypeError(behaviour.message);
    }
  };
}

/** Without null values: absent and null mean the same in start options. */
function compact(object) {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== null && v !== undefined));
}

test("each job follows the schema and makes its step context", async () => {
  for (const job of examples.jobs) {
    assertValid("job", job);
    const ctx = stepContext(job, new AbortController().signal);
    if (job.parent_results_by_reference) {
      await assert.rejects(ctx.parentResults.all(), /by reference and nothing reads them/);
      continue;
    }
    assert.deepEqual(
      [ctx.taskId, ctx.stepId, ctx.namespace, ctx.taskName, ctx.stepName, ctx.handler, ctx.attempt, ctx.maxAttempts],
      [job.task_id, job.step_id, job.namespace, job.task_name, job.step_name, job.handler, job.attempt, job.max_attempts],
    );
    assert.deepEqual(ctx.context, job.context);
    assert.deepEqual(ctx.input, job.input ?? null);
    assert.deepEqual(await ctx.parentResults.all(), job.parent_results);
    assert.equal(ctx.timeout, job.timeout_ms / 1000, "seconds");
    assert.ok(ctx.heartbeat(), "outside a worker a step is always its handler's");
  }
});

test("each case gives its outcome", async () => {
  const job = examples.jobs[0];
  for (const c of examples.cases) {
    const registry = new Registry().register(job.handler, handlerFor(c.handler));
    const encoded = JSON.parse(outcomeJson(await execute(registry, job)));
    assertValid("outcome", encoded);
    assert.equal(encoded.id, job.id);
    assert.ok(matches(encoded, c.outcome), `${c.name}: ${JSON.stringify(encoded)}`);
  }
});

test("the schema tells outcomes from what are not", () => {
  for (const outcome of examples.outcomes) assertValid("outcome", outcome);
  const validate = validator("outcome");
  for (const bad of examples.invalid_outcomes) assert.ok(!validate(bad.outcome), bad.why);
});

test("Worker.start sends start options the schema takes", () => {
  for (const example of examples.start_options) {
    const sent = JSON.parse(
      startOptions({
        templates: example.templates,
        configFile: example.config,
        healthPort: example.health_port,
        concurrency: example.concurrency,
        orchestratorUrl: example.orchestrator_url,
        shutdownTimeout: example.shutdown_timeout,
      }, example.handlers ?? undefined),
    );
    assertValid("start_options", sent);
    assert.deepEqual(compact(sent), compact(example));
  }
  const validate = validator("start_options");
  for (const bad of examples.invalid_start_options) assert.ok(!validate(bad.options), bad.why);
});

// The core consumes only the namespaces of the steps whose handlers the worker has: the
// registry's names go in start_options (sorted), and none are sent unless given.
test("Worker.start tells the core the handlers it registered", async () => {
  const binding = require("../index.js");
  const sent = [];
  const idleCore = { concurrency: 1, shutdownTimeout: 1, shutdown() {}, stop() {} };
  const NativeWorker = binding.NativeWorker;
  const silent = { error() {}, warn() {}, info() {}, debug() {} };
  // The class's statics are read-only: the worker module reads the binding's export at each
  // start, so a stand-in class goes there instead.
  binding.NativeWorker = {
    start(options) {
      sent.push(JSON.parse(options));
      return idleCore;
    },
  };
  try {
    const registry = new Registry().register("score", () => null).register("double", () => null);
    await Worker.start({ templates: "templates/", registry, concurrency: 2, logger: silent }).stop();
    await Worker.start({ templates: "templates/", registry: new Registry(), logger: silent }).stop();
  } finally {
    binding.NativeWorker = NativeWorker;
  }
  assert.deepEqual(sent, [
    { templates: "templates/", concurrency: 2, handlers: ["double", "score"] },
    { templates: "templates/", handlers: [] },
  ]);
  assert.equal("handlers" in JSON.parse(startOptions({ templates: "t" })), false);
});
