"use strict";
// The cluster of the client tests against a real orchestrator (PostgreSQL, RabbitMQ,
// target/debug/tasker-orchestrator): the fixture handlers run in an in-process Worker, and the
// variables the clients read are put aside while the tests run.
const { after, before } = require("node:test");
const path = require("node:path");

const { Client, Worker } = require("../../dist/index.js");
// The fixture templates' handlers, into the default registry the Worker runs.
require("../../dist/fixtures/handlers.js");
const { repoRoot, startOrchestrator } = require("./orchestrator.js");
const { ns } = require("./answers.js");

const templates = path.join(repoRoot, "tests/fixtures/task_templates/typescript");
// The clients read these when no argument names them: only the tests that set them use them.
const clientVars = ["TASKER_URL", "TASKER_TOKEN", "TASKER_TLS_CA_FILE"];

/**
 * An orchestrator for the fixture templates and a Worker running their handlers, for the
 * describe block that calls it: up before the block's tests (with `clientVars` unset), down after
 * them (with `clientVars` as they were). Its `orchestrator` and a `client` of it are set on the
 * object returned once they are up.
 */
function clientCluster() {
  const cluster = { orchestrator: undefined, client: undefined };
  let worker;
  let running;
  const saved = {};

  before(async () => {
    for (const name of clientVars) {
      saved[name] = process.env[name];
      delete process.env[name];
    }
    cluster.orchestrator = await startOrchestrator({ templates, namespaces: [ns] });
    Object.assign(process.env, cluster.orchestrator.env);
    worker = Worker.start({ templates, healthPort: 0, concurrency: 8 });
    running = worker.run();
    cluster.client = new Client(cluster.orchestrator.baseUrl);
  });

  after(async () => {
    await worker?.stop();
    await running;
    await cluster.orchestrator?.stop();
    for (const name of clientVars) {
      if (saved[name] !== undefined) process.env[name] = saved[name];
    }
  });

  return cluster;
}

module.exports = { clientCluster, clientVars };
