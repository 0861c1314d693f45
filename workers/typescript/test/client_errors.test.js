"use strict";
// The API client's errors against a real orchestrator (PostgreSQL, RabbitMQ,
// target/debug/tasker-orchestrator) with the fixture handlers running in an in-process Worker
// (support/client_cluster.js): the API's stable codes, an orchestrator that cannot be reached or
// does not answer, and a peer of the same cluster serving https:// with tokens required.
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { randomUUID } = require("node:crypto");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");

const {
  ApiError,
  AuthError,
  Client,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  TaskerClientError,
} = require("../dist/index.js");
const { clientCluster, clientVars } = require("./support/client_cluster.js");
const { freePort, repoRoot } = require("./support/orchestrator.js");
const { apiError, ns } = require("./support/answers.js");

const packageDir = path.join(__dirname, "..");

describe("Client", () => {
  const cluster = clientCluster();
  let orchestrator;
  let client;

  before(() => {
    ({ orchestrator, client } = cluster);
  });

  it("rejects with the API's stable code, by status", async () => {
    const unknown = randomUUID();
    await assert.rejects(client.getTask(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.steps(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.history(unknown), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.wait(unknown, 1_000), apiError(NotFoundError, 404, "task_not_found"));
    await assert.rejects(client.getTask("nope"), apiError(InvalidRequestError, 400, "invalid_id"));
    await assert.rejects(client.createTask(ns, "no_such_template", {}), apiError(NotFoundError, 404, "unknown_template"));
    await assert.rejects(client.createTask(ns, "linear", { value: "six" }), (err) => {
      apiError(InvalidRequestError, 422, "context_schema_violation")(err);
      assert.ok(Array.isArray(err.details) && err.details.length > 0, JSON.stringify(err.details));
      return true;
    });
  });

  it("rejects with a ConnectionError when the orchestrator cannot be reached or does not answer", async () => {
    const closedPort = await freePort();
    const nobody = new Client(`http://127.0.0.1:${closedPort}`);
    await assert.rejects(nobody.getTask(randomUUID()), (err) => {
      assert.ok(err instanceof ConnectionError && err instanceof TaskerClientError);
      assert.ok(!(err instanceof ApiError));
      assert.equal(err.cause.code, "ECONNREFUSED");
      assert.match(err.message, /cannot reach the Tasker API/);
      return true;
    });

    // Accepts connections and never answers.
    const sockets = new Set();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const mute = new Client(`http://127.0.0.1:${silent.address().port}`, { timeoutMs: 300 });
      await assert.rejects(mute.listTasks(), (err) => {
        assert.ok(err instanceof ConnectionError);
        assert.match(err.message, /no answer from the Tasker API within 300 ms/);
        return true;
      });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }

    assert.throws(() => new Client("ftp://example.com"), TaskerClientError);
  });

  it("reaches an https:// orchestrator with a private CA, and sends its token", async (t) => {
    // The throwaway CA and localhost certificate cargo-make/services.sh makes for the local services.
    const tls = path.join(process.env.TASKER_HOME ?? path.join(repoRoot, ".tasker"), "tls");
    const [ca, cert, key] = ["ca.pem", "server.pem", "server.key"].map((f) => path.join(tls, f));
    if (![ca, cert, key].every((f) => fs.existsSync(f))) {
      t.skip(`no TLS material in ${tls} (cargo-make/services.sh start makes it)`);
      return;
    }
    const reader = orchestrator.createToken("ts-reader", "read");
    const writer = orchestrator.createToken("ts-writer", "write");
    const secure = await orchestrator.peer({
      TASKER_ORCHESTRATOR__TLS_CERT_FILE: cert,
      TASKER_ORCHESTRATOR__TLS_KEY_FILE: key,
      TASKER_ORCHESTRATOR__AUTH: "tokens",
    });
    assert.match(secure.baseUrl, /^https:/);

    // Node's own roots do not include the private CA.
    await assert.rejects(new Client(secure.baseUrl, { token: reader }).listTasks(), (err) => {
      assert.ok(err instanceof ConnectionError, `${err}`);
      assert.match(err.message, /certificate/);
      return true;
    });
    await assert.rejects(
      new Client(secure.baseUrl, { tlsCaFile: ca }).listTasks(),
      apiError(AuthError, 401, "unauthenticated"),
    );
    const reading = new Client(secure.baseUrl, { tlsCaFile: ca, token: reader });
    assert.ok(Array.isArray((await reading.listTasks({ limit: 1 })).tasks));
    await assert.rejects(reading.createTask(ns, "linear", { value: 6 }), apiError(AuthError, 403, "forbidden"));

    // From the environment, as an app configured by TASKER_* would.
    Object.assign(process.env, { TASKER_URL: secure.baseUrl, TASKER_TOKEN: writer, TASKER_TLS_CA_FILE: ca });
    try {
      const fromEnv = new Client();
      assert.equal(fromEnv.baseUrl, secure.baseUrl);
      const done = await fromEnv.wait(await fromEnv.createTask(ns, "linear", { value: 6 }), 30_000);
      assert.equal(done.state, "complete");
      assert.deepEqual(done.result, { halve: { value: 242 } });
    } finally {
      for (const name of clientVars) delete process.env[name];
    }

    assert.throws(() => new Client(secure.baseUrl, { tlsCaFile: path.join(tls, "missing.pem") }), (err) => {
      assert.ok(err instanceof TaskerClientError);
      assert.match(err.message, /cannot read the CA file/);
      return true;
    });
    assert.throws(
      () => new Client(secure.baseUrl, { tlsCaFile: path.join(packageDir, "package.json") }),
      /holds no PEM certificate/,
    );
  });
});
