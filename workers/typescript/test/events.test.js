"use strict";
// The events calls (`sendEvent`, `sendEvents`, `events`, `event`) against a stand-in API: the
// requests the contract describes and the values read from its answers
// (tests/fast/templates/events.rs checks what a real orchestrator starts).
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");

const { AuthError, Client, ConflictError, InvalidRequestError, NotFoundError } = require("../dist/index.js");
const { apiError } = require("./support/answers.js");
const { recordedStandIn, standIn } = require("./support/stand_in.js");

describe("Client and the events API's wire", () => {
  const eventId = "019a0000-0000-7000-8000-0000000000e1";
  const taskId = "019a0000-0000-7000-8000-0000000000e2";
  const data = { id: 42, total: 180 };
  const event = {
    id: eventId,
    namespace: "shop",
    name: "order.created",
    key: "customer-7",
    sender_id: "order-42-created",
    data,
    received_at: "2026-11-30T09:00:00.123Z",
    started: [
      { template: "shop/fulfil@2", task_id: taskId, debounced: false, deduplicated: false, refused: null },
      {
        template: "shop/audit@1",
        task_id: null,
        debounced: false,
        deduplicated: false,
        refused: { code: "forbidden", message: "not your namespace", details: null },
      },
    ],
  };
  // An event that matched nothing, sent without key or id.
  const bare = {
    id: "019a0000-0000-7000-8000-0000000000e0",
    namespace: "shop",
    name: "order.viewed",
    key: null,
    sender_id: null,
    data: {},
    received_at: "2026-11-30T08:59:00Z",
    started: [],
  };
  const sentBatch = {
    created: 1,
    existing: 1,
    refused: 1,
    results: [
      { index: 0, status: "created", event_id: eventId, task_ids: [taskId] },
      { index: 1, status: "existing", event_id: eventId, task_ids: [taskId] },
      { index: 2, status: "refused", error: { code: "invalid_event_name", message: "not a name", details: null } },
    ],
  };
  const answers = {
    // A new event (201), the same id again (200: the one stored first), one without key or id,
    // then two refusals.
    "POST /v1/events": [
      [201, event],
      [200, event],
      [201, bare],
      [403, { error: { code: "forbidden", message: "the token does not cover bank" } }],
      [400, { error: { code: "invalid_event_name", message: "not a name" } }],
    ],
    "POST /v1/events:batch": [200, sentBatch],
    "GET /v1/events/log": [
      [200, { events: [event], next_before: eventId }],
      [200, { events: [bare], next_before: null }],
    ],
    [`GET /v1/events/${eventId}`]: [200, event],
  };
  const { requests, base } = recordedStandIn(answers);
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    const sent = await client.sendEvent("shop", "order.created", data, { key: "customer-7", id: "order-42-created" });
    assert.deepEqual(sent, {
      id: eventId,
      namespace: "shop",
      name: "order.created",
      key: "customer-7",
      senderId: "order-42-created",
      data,
      receivedAt: new Date("2026-11-30T09:00:00.123Z"),
      started: [
        { template: "shop/fulfil@2", taskId, debounced: false, deduplicated: false, refused: null },
        {
          template: "shop/audit@1",
          taskId: null,
          debounced: false,
          deduplicated: false,
          refused: { code: "forbidden", message: "not your namespace", details: null },
        },
      ],
      // No wait took it (the stand-in leaves `taken_by` out, as the server does then).
      takenBy: null,
    });
    // A repeat answers the event stored the first time.
    assert.deepEqual(await client.sendEvent("shop", "order.created", data, { id: "order-42-created" }), sent);
    const viewed = await client.sendEvent("shop", "order.viewed");
    assert.deepEqual([viewed.key, viewed.senderId, viewed.data, viewed.started], [null, null, {}, []]);

    const batch = await client.sendEvents([
      { namespace: "shop", name: "order.created", data, id: "order-42-created" },
      { namespace: "shop", name: "order.created", id: "order-42-created", key: undefined },
      { namespace: "shop", name: "not a name" },
    ]);
    assert.deepEqual([batch.created, batch.existing, batch.refused], [1, 1, 1]);
    assert.deepEqual(
      batch.results.map((r) => [r.index, r.status, r.eventId, r.taskIds]),
      [
        [0, "created", eventId, [taskId]],
        [1, "existing", eventId, [taskId]],
        [2, "refused", null, null],
      ],
    );
    assert.deepEqual(batch.results[2].error, { code: "invalid_event_name", message: "not a name", details: null });

    const page = await client.events({ namespace: "shop", name: "order.created", limit: 1 });
    assert.deepEqual(page, { events: [sent], nextBefore: eventId });
    assert.deepEqual(await client.events({ before: page.nextBefore }), { events: [viewed], nextBefore: null });
    assert.deepEqual(await client.event(eventId), sent);
    assert.deepEqual(await client.event(sent), sent);
    await assert.rejects(client.event(taskId), apiError(NotFoundError, 404, "no_route"));
    await assert.rejects(client.sendEvent("bank", "order.created"), apiError(AuthError, 403, "forbidden"));
    await assert.rejects(client.sendEvent("shop", "not a name"), apiError(InvalidRequestError, 400, "invalid_event_name"));

    assert.deepEqual(requests, [
      [
        "POST",
        "/v1/events",
        { namespace: "shop", name: "order.created", data, key: "customer-7", id: "order-42-created" },
      ],
      ["POST", "/v1/events", { namespace: "shop", name: "order.created", data, id: "order-42-created" }],
      ["POST", "/v1/events", { namespace: "shop", name: "order.viewed" }],
      [
        "POST",
        "/v1/events:batch",
        {
          events: [
            { namespace: "shop", name: "order.created", data, id: "order-42-created" },
            { namespace: "shop", name: "order.created", id: "order-42-created" },
            { namespace: "shop", name: "not a name" },
          ],
        },
      ],
      ["GET", "/v1/events/log?namespace=shop&name=order.created&limit=1", null],
      ["GET", `/v1/events/log?before=${eventId}`, null],
      ["GET", `/v1/events/${eventId}`, null],
      ["GET", `/v1/events/${eventId}`, null],
      ["GET", `/v1/events/${taskId}`, null],
      ["POST", "/v1/events", { namespace: "bank", name: "order.created" }],
      ["POST", "/v1/events", { namespace: "shop", name: "not a name" }],
    ]);
  });

});

describe("Client and the start controls' wire", () => {
  const taskId = "019a0000-0000-7000-8000-0000000000e2";
  const task = {
    id: taskId,
    namespace: "shop",
    name: "sync",
    version: "1",
    state: "scheduled",
    context: { customer: "ada" },
    idempotency_key: null,
    open_steps: 1,
    result: null,
    error: null,
    completed_at: null,
    duration_ms: null,
    run_at: "2026-11-30T09:00:05Z",
    created_at: "2026-11-30T09:00:00Z",
  };
  const details = { task_id: taskId, until: "2026-12-01T09:00:00Z" };
  const requests = [];
  const base = standIn(
    {
      "POST /v1/tasks": [
        [201, task],
        [200, task],
        [409, { error: { code: "deduplicated", message: `task ${taskId} was purged`, details } }],
        [201, { ...task, deadline: { within_ms: 90000, action: "cancel", at: null, passed_at: null } }],
      ],
    },
    (req, text) => requests.push([req.method, req.url, JSON.parse(text)]),
  );

  it("sends dedupe, debounce and a deadline as the API takes them, and a purged key's conflict", async () => {
    const client = new Client(base());
    const context = { customer: "ada" };
    const debounce = { key: "ada", period: 5, max: "1m", mode: "trailing" };
    assert.equal((await client.createTask("shop", "sync", context, { debounce })).state, "scheduled");
    const dedupe = { key: "invoice-1", ttl: "24h" };
    await client.createTask("shop", "sync", context, { dedupe });
    const conflict = await client.createTask("shop", "sync", context, { dedupe }).catch((e) => e);
    assert.ok(conflict instanceof ConflictError, String(conflict));
    assert.deepEqual([conflict.status, conflict.code, conflict.details], [409, "deduplicated", details]);
    const deadline = { within: 90, action: "cancel" };
    const limited = await client.createTask("shop", "sync", context, { deadline });
    assert.deepEqual([limited.deadline.withinMs, limited.deadline.action], [90000, "cancel"]);
    const body = { namespace: "shop", name: "sync", context };
    assert.deepEqual(requests, [
      ["POST", "/v1/tasks", { ...body, debounce: { key: "ada", period: "5s", max: "1m", mode: "trailing" } }],
      ["POST", "/v1/tasks", { ...body, dedupe }],
      ["POST", "/v1/tasks", { ...body, dedupe }],
      ["POST", "/v1/tasks", { ...body, deadline: { within: "90s", action: "cancel" } }],
    ]);
  });
});
