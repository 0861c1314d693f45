"use strict";
// The audit log's call (`Client.audit`) against a stand-in API: the filters it sends in the query
// and the page it reads back (the security suite, tests/slow/security/audit.rs, checks the rows a
// real orchestrator writes).
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");

const { AuthError, Client } = require("../dist/index.js");
const { standIn } = require("./support/stand_in.js");

describe("Client and the audit log's wire", () => {
  const taskId = "019a0000-0000-7000-8000-0000000000a1";
  const entry = {
    id: 42,
    at: "2026-11-27T10:02:03.123Z",
    token_id: 7,
    token_name: "ci",
    method: "POST",
    route: "/v1/tasks/{id}/cancel",
    status: 200,
    peer: "10.0.0.5",
    namespaces: ["shop"],
    task_id: taskId,
    target: {},
  };
  // A refusal without a token: the optional fields absent.
  const refused = {
    id: 41,
    at: "2026-11-27T10:02:02Z",
    method: "DELETE",
    route: "/v1/tokens/{name}",
    status: 401,
    namespaces: [],
    target: { token: "ci" },
  };
  const answers = {
    "GET /v1/audit": [
      [200, { entries: [entry, refused], next_before: 41 }],
      [200, { entries: [], next_before: null }],
      [403, { error: { code: "forbidden", message: "this needs admin" } }],
    ],
  };
  const requests = [];
  const base = standIn(answers, (req) => requests.push([req.method, req.url]));

  it("sends the filters and reads a page", async () => {
    const client = new Client(base());
    const page = await client.audit({
      namespace: "shop",
      token: "ci",
      route: "/v1/tasks/{id}/cancel",
      method: "POST",
      since: new Date("2026-11-27T11:00:00+01:00"),
      until: "2026-11-28T00:00:00Z",
      limit: 2,
    });
    assert.equal(page.nextBefore, 41);
    assert.deepEqual(page.entries[0], {
      id: 42,
      at: new Date("2026-11-27T10:02:03.123Z"),
      tokenId: 7,
      tokenName: "ci",
      method: "POST",
      route: "/v1/tasks/{id}/cancel",
      status: 200,
      peer: "10.0.0.5",
      forwardedFor: null,
      namespaces: ["shop"],
      taskId,
      target: {},
    });
    const r = page.entries[1];
    assert.deepEqual([r.tokenId, r.tokenName, r.peer, r.taskId, r.status], [null, null, null, null, 401]);
    assert.deepEqual(r.target, { token: "ci" });
    assert.deepEqual((await client.audit({ before: page.nextBefore })).entries, []);
    await assert.rejects(client.audit(), (err) => err instanceof AuthError && err.status === 403);
    assert.deepEqual(requests, [
      [
        "GET",
        "/v1/audit?namespace=shop&token=ci&route=%2Fv1%2Ftasks%2F%7Bid%7D%2Fcancel&method=POST&limit=2" +
          "&since=2026-11-27T10%3A00%3A00.000Z&until=2026-11-28T00%3A00%3A00Z",
      ],
      ["GET", "/v1/audit?before=41"],
      ["GET", "/v1/audit"],
    ]);
  });
});
