"use strict";
// Integers beyond ±(2^53 − 1) against a stand-in answering with raw JSON text: read as BigInt
// (JSON.parse would round 9007199254740993 to 9007199254740992), and a BigInt sent as a bare
// integer (JSON.stringify would throw).
const { after, before, describe, it } = require("node:test");
const assert = require("node:assert/strict");
const http = require("node:http");

const { Client, InvalidRequestError } = require("../dist/index.js");
const { ns } = require("./support/answers.js");

describe("Client and big integers", () => {
  const taskId = "019a0000-0000-7000-8000-000000000031";
  const big = "9007199254740993";
  const taskJson = (context) =>
    `{"id":"${taskId}","namespace":"${ns}","name":"linear","version":"1.0.0","state":"complete",` +
    `"context":${context},"idempotency_key":null,"open_steps":0,` +
    `"result":{"halve":{"value":${big},"neg":-${big},"note":"${big}","ratio":1.5e300}},"error":null,` +
    `"created_at":"2026-11-26T09:00:00Z","completed_at":"2026-11-26T09:00:01Z","duration_ms":1000,"run_at":null}`;
  const stepJson =
    `{"id":"019a0000-0000-7000-8000-000000000032","name":"halve","handler":"halve","step_type":"standard",` +
    `"state":"completed","attempt":1,"max_attempts":3,"result":{"value":${big}},"error":null,` +
    `"created_at":"2026-11-26T09:00:00Z"}`;
  const bodies = [];
  let server;
  let client;

  before(async () => {
    server = http.createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      bodies.push(text);
      const route = `${req.method} ${req.url.split("?")[0]}`;
      let status = 200;
      let answer;
      if (route === "POST /v1/tasks") {
        // The context as sent, echoed.
        status = 201;
        answer = taskJson(text.match(/"context":(\{[^}]*\})/)[1]);
      } else if (route === `GET /v1/tasks/${taskId}`) {
        answer = taskJson(`{"id":${big}}`);
      } else if (route === `GET /v1/tasks/${taskId}/steps`) {
        answer = `{"steps":[${stepJson}],"next":null}`;
      } else {
        status = 422;
        answer = `{"error":{"code":"invalid_result","message":"no","details":{"limit":-${big}}}}`;
      }
      res.writeHead(status, { "content-type": "application/json" });
      res.end(answer);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    client = new Client(`http://127.0.0.1:${server.address().port}`);
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads them as BigInt and sends BigInt as exact integers", async () => {
    const task = await client.getTask(taskId);
    assert.deepEqual(task.context, { id: 9007199254740993n });
    assert.deepEqual(task.result, {
      halve: { value: 9007199254740993n, neg: -9007199254740993n, note: big, ratio: 1.5e300 },
    });
    assert.equal(task.durationMs, 1000);
    const [step] = await client.steps(taskId);
    assert.deepEqual(step.result, { value: 9007199254740993n });

    const created = await client.createTask(ns, "linear", { id: 9007199254740993n, small: 5 });
    assert.equal(bodies.at(-1), `{"namespace":"${ns}","name":"linear","context":{"id":${big},"small":5}}`);
    assert.deepEqual(created.context, { id: 9007199254740993n, small: 5 });

    await assert.rejects(client.resolve(taskId, "halve", { value: -9007199254740993n }), (err) => {
      assert.ok(err instanceof InvalidRequestError);
      assert.deepEqual(err.details, { limit: -9007199254740993n });
      return true;
    });
    assert.equal(bodies.at(-1), `{"result":{"value":-${big}}}`);
  });
});
