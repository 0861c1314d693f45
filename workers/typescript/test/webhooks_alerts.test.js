"use strict";
// The webhooks and alert rules calls (`putWebhook`, `listWebhooks`, `getWebhook`, `deleteWebhook`;
// `putAlert`, `listAlerts`, `getAlert`, `deleteAlert`) against a stand-in API: the requests the
// contract describes and the values read from its answers (tests/fast/templates/webhooks.rs and
// the alerts suites check what a real orchestrator does with them).
const { before, describe, it } = require("node:test");
const assert = require("node:assert/strict");

const { Client, InvalidRequestError, NotFoundError } = require("../dist/index.js");
const { apiError } = require("./support/answers.js");
const { recordedStandIn } = require("./support/stand_in.js");

const times = { created_at: "2026-11-30T09:00:00.123Z", updated_at: "2026-11-30T09:00:00.123Z" };
const made = "whk_0123456789abcdef0123456789abcdef";
const error = (code, message, details = null) => ({ error: { code, message, details } });

describe("Client and the webhooks API's wire", () => {
  // A generic webhook as a GET shows it: never its secret.
  const orders = {
    name: "orders",
    namespace: "shop",
    format: "generic",
    event: null,
    key: "/customer",
    id: null,
    tolerance_seconds: 300,
    received: 2,
    last_received_at: "2026-11-30T10:00:00Z",
    ...times,
  };
  const github = {
    ...orders,
    name: "gh",
    namespace: "ci",
    format: "github",
    event: "github.any",
    key: null,
    id: "/head_commit/id",
    tolerance_seconds: 120,
    received: 0,
    last_received_at: null,
  };
  const answers = {
    // Made (201, with the secret Tasker made, this once), then replaced (200: none).
    "PUT /v1/webhooks/orders": [
      [201, { ...orders, secret: made }],
      [200, orders],
    ],
    "PUT /v1/webhooks/gh": [201, github],
    "GET /v1/webhooks": [200, { webhooks: [github, orders] }],
    "GET /v1/webhooks/orders": [200, orders],
    "DELETE /v1/webhooks/orders": [
      [204, null],
      [404, error("webhook_not_found", "no webhook orders")],
    ],
  };
  const { requests, base } = recordedStandIn(answers);
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends the contract's requests and reads its answers", async () => {
    const created = await client.putWebhook("orders", { namespace: "shop", key: "/customer", secret: undefined });
    const shownOrders = {
      name: "orders",
      namespace: "shop",
      format: "generic",
      event: null,
      key: "/customer",
      id: null,
      toleranceSeconds: 300,
      received: 2,
      lastReceivedAt: new Date("2026-11-30T10:00:00Z"),
      createdAt: new Date("2026-11-30T09:00:00.123Z"),
      updatedAt: new Date("2026-11-30T09:00:00.123Z"),
      // Left out by the server: null, as every answer but the one that made it has it.
      secret: null,
    };
    assert.deepEqual(created, { ...shownOrders, secret: made });
    const replaced = await client.putWebhook("orders", { namespace: "shop", key: "/customer", tolerance: 90 });
    assert.deepEqual(replaced, shownOrders);
    const gh = await client.putWebhook("gh", {
      namespace: "ci",
      format: "github",
      secret: "s3cret-s3cret-s3cret",
      event: "github.any",
      id: "/head_commit/id",
      tolerance: "2m",
    });
    assert.deepEqual([gh.format, gh.toleranceSeconds, gh.lastReceivedAt, gh.secret], ["github", 120, null, null]);

    const listed = await client.listWebhooks();
    assert.deepEqual(listed, [gh, shownOrders]);
    assert.deepEqual(await client.getWebhook("orders"), shownOrders);
    assert.equal(await client.deleteWebhook("orders"), undefined);
    await assert.rejects(client.deleteWebhook("orders"), apiError(NotFoundError, 404, "webhook_not_found"));

    assert.deepEqual(requests, [
      ["PUT", "/v1/webhooks/orders", { namespace: "shop", key: "/customer" }],
      ["PUT", "/v1/webhooks/orders", { namespace: "shop", key: "/customer", tolerance: "90s" }],
      [
        "PUT",
        "/v1/webhooks/gh",
        {
          namespace: "ci",
          format: "github",
          secret: "s3cret-s3cret-s3cret",
          event: "github.any",
          id: "/head_commit/id",
          tolerance: "2m",
        },
      ],
      ["GET", "/v1/webhooks", null],
      ["GET", "/v1/webhooks/orders", null],
      ["DELETE", "/v1/webhooks/orders", null],
      ["DELETE", "/v1/webhooks/orders", null],
    ]);
  });
});

describe("Client and the alerts API's wire", () => {
  // An alert rule as a GET shows it: what it last did, never its secret; `when` without the
  // fields it was saved without.
  const charges = {
    name: "charges",
    namespace: "shop",
    when: { kind: "failures", template: "charge", count: 5, within: "1m" },
    sink: { kind: "webhook", url: "https://ops.example.com/tasker" },
    suppress_seconds: 900,
    state: "firing",
    observed: 6,
    checked_at: "2026-11-30T10:00:01Z",
    fired_at: "2026-11-30T10:00:00Z",
    resolved_at: null,
    sent: 1,
    failed: 0,
    suppressed: 2,
    last_error: null,
    ...times,
  };
  const stuck = {
    ...charges,
    name: "stuck",
    when: { kind: "steps_waiting", longer_than: "10m" },
    sink: { kind: "slack", url: "https://hooks.slack.com/services/T/B/X" },
    suppress_seconds: 0,
    state: "ok",
    observed: null,
    checked_at: null,
    fired_at: null,
    sent: 0,
    suppressed: 0,
  };
  const email = { kind: "email", to: ["ops@example.com", "oncall@example.com"] };
  const late = {
    ...stuck,
    name: "late",
    when: { kind: "deadline_passed" },
    sink: email,
    suppress_seconds: 900,
    last_error: "not checked: the token that saved it was revoked",
  };
  const invalid = error("invalid_alert", "within: at most 1d", { field: "when.within", problem: "at most 1d" });
  const missing = error("alert_not_found", "no alert rule gone");
  const answers = {
    "PUT /v1/alerts/charges": [
      [201, { ...charges, secret: made }],
      [200, charges],
      [400, invalid],
    ],
    "PUT /v1/alerts/stuck": [201, stuck],
    "PUT /v1/alerts/late": [201, late],
    "GET /v1/alerts": [200, { alerts: [charges, late, stuck] }],
    "GET /v1/alerts/charges": [200, charges],
    "GET /v1/alerts/gone": [404, missing],
    "DELETE /v1/alerts/charges": [204, null],
    "DELETE /v1/alerts/gone": [404, missing],
  };
  const { requests, base } = recordedStandIn(answers);
  let client;
  before(() => {
    client = new Client(base());
  });

  it("sends each sink as the API takes it, reads its answers, and rejects with its errors", async () => {
    const webhookSink = { kind: "webhook", url: "https://ops.example.com/tasker" };
    const created = await client.putAlert("charges", {
      namespace: "shop",
      sink: webhookSink,
      when: { kind: "failures", template: "charge", count: 5, within: 60, longerThan: undefined },
    });
    const shownCharges = {
      name: "charges",
      namespace: "shop",
      // The fields it was saved without read null.
      when: { kind: "failures", template: "charge", count: 5, within: "1m", longerThan: null, schedule: null },
      sink: webhookSink,
      suppressSeconds: 900,
      state: "firing",
      observed: 6,
      checkedAt: new Date("2026-11-30T10:00:01Z"),
      firedAt: new Date("2026-11-30T10:00:00Z"),
      resolvedAt: null,
      sent: 1,
      failed: 0,
      suppressed: 2,
      lastError: null,
      createdAt: new Date("2026-11-30T09:00:00.123Z"),
      updatedAt: new Date("2026-11-30T09:00:00.123Z"),
      secret: null,
    };
    assert.deepEqual(created, { ...shownCharges, secret: made });
    // A given secret (a webhook sink's) is sent; the answer shows none.
    const replaced = await client.putAlert("charges", {
      namespace: "shop",
      when: { kind: "failures" },
      sink: webhookSink,
      secret: "a-secret-of-our-own",
      suppress: "15m",
    });
    assert.deepEqual(replaced, shownCharges);
    const waiting = await client.putAlert("stuck", {
      namespace: "shop",
      when: { kind: "steps_waiting", longerThan: 600 },
      sink: { kind: "slack", url: stuck.sink.url },
      suppress: 0,
    });
    assert.deepEqual(
      [waiting.sink, waiting.when.longerThan, waiting.checkedAt, waiting.observed],
      [stuck.sink, "10m", null, null],
    );
    const passed = await client.putAlert("late", { namespace: "shop", when: { kind: "deadline_passed" }, sink: email });
    assert.deepEqual([passed.sink, passed.lastError], [email, late.last_error]);

    const listed = await client.listAlerts();
    assert.deepEqual(listed, [shownCharges, passed, waiting]);
    const shown = await client.getAlert("charges");
    assert.deepEqual(shown, shownCharges);
    // An answer's condition and sink are saved again as they are.
    const again = { namespace: shown.namespace, when: shown.when, sink: shown.sink };
    const refused = await client.putAlert("charges", again).catch((e) => e);
    apiError(InvalidRequestError, 400, "invalid_alert")(refused);
    assert.deepEqual(refused.details, { field: "when.within", problem: "at most 1d" });
    await assert.rejects(client.getAlert("gone"), apiError(NotFoundError, 404, "alert_not_found"));
    assert.equal(await client.deleteAlert("charges"), undefined);
    await assert.rejects(client.deleteAlert("gone"), apiError(NotFoundError, 404, "alert_not_found"));

    assert.deepEqual(requests, [
      [
        "PUT",
        "/v1/alerts/charges",
        { namespace: "shop", sink: webhookSink, when: { kind: "failures", template: "charge", count: 5, within: "60s" } },
      ],
      [
        "PUT",
        "/v1/alerts/charges",
        {
          namespace: "shop",
          when: { kind: "failures" },
          sink: webhookSink,
          secret: "a-secret-of-our-own",
          suppress: "15m",
        },
      ],
      [
        "PUT",
        "/v1/alerts/stuck",
        {
          namespace: "shop",
          when: { kind: "steps_waiting", longer_than: "600s" },
          sink: { kind: "slack", url: stuck.sink.url },
          suppress: "0s",
        },
      ],
      ["PUT", "/v1/alerts/late", { namespace: "shop", when: { kind: "deadline_passed" }, sink: email }],
      ["GET", "/v1/alerts", null],
      ["GET", "/v1/alerts/charges", null],
      [
        "PUT",
        "/v1/alerts/charges",
        { namespace: "shop", sink: webhookSink, when: { kind: "failures", template: "charge", count: 5, within: "1m" } },
      ],
      ["GET", "/v1/alerts/gone", null],
      ["DELETE", "/v1/alerts/charges", null],
      ["DELETE", "/v1/alerts/gone", null],
    ]);
  });
});
