# frozen_string_literal: true

require_relative "client_support"

# The webhooks and alert rules calls (Client#put_webhook, #list_webhooks, #get_webhook,
# #delete_webhook; #put_alert, #list_alerts, #get_alert, #delete_alert) against the stand-in of
# client_support.rb: the requests the contract describes and the records read from its answers
# (tests/fast/templates/webhooks.rs and the alerts suites check what a real orchestrator does
# with them).
class ClientWebhooksAlertsWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  TIMES = { "created_at" => "2026-11-30T09:00:00.123456Z", "updated_at" => "2026-11-30T09:00:00.123456Z" }.freeze
  MADE = "whk_0123456789abcdef0123456789abcdef"
  # A generic webhook as a GET shows it: never its secret.
  ORDERS = {
    "name" => "orders", "namespace" => "shop", "format" => "generic", "event" => nil, "key" => "/customer",
    "id" => nil, "tolerance_seconds" => 300, "received" => 2, "last_received_at" => "2026-11-30T10:00:00Z", **TIMES
  }.freeze
  GITHUB = ORDERS.merge(
    "name" => "gh", "namespace" => "ci", "format" => "github", "event" => "github.any", "key" => nil,
    "id" => "/head_commit/id", "tolerance_seconds" => 120, "received" => 0, "last_received_at" => nil
  ).freeze
  # An alert rule as a GET shows it: what it last did, never its secret; `when` without the fields
  # it was saved without.
  WEBHOOK_SINK = { "kind" => "webhook", "url" => "https://ops.example.com/tasker" }.freeze
  EMAIL_SINK = { "kind" => "email", "to" => ["ops@example.com", "oncall@example.com"] }.freeze
  CHARGES = {
    "name" => "charges", "namespace" => "shop",
    "when" => { "kind" => "failures", "template" => "charge", "count" => 5, "within" => "1m" },
    "sink" => WEBHOOK_SINK, "suppress_seconds" => 900, "state" => "firing", "observed" => 6,
    "checked_at" => "2026-11-30T10:00:01Z", "fired_at" => "2026-11-30T10:00:00Z", "resolved_at" => nil,
    "sent" => 1, "failed" => 0, "suppressed" => 2, "last_error" => nil, **TIMES
  }.freeze
  STUCK = CHARGES.merge(
    "name" => "stuck", "when" => { "kind" => "steps_waiting", "longer_than" => "10m" },
    "sink" => { "kind" => "slack", "url" => "https://hooks.slack.com/services/T/B/X" }, "suppress_seconds" => 0,
    "state" => "ok", "observed" => nil, "checked_at" => nil, "fired_at" => nil, "sent" => 0, "suppressed" => 0
  ).freeze
  LATE = STUCK.merge(
    "name" => "late", "when" => { "kind" => "deadline_passed" }, "sink" => EMAIL_SINK, "suppress_seconds" => 900,
    "last_error" => "not checked: the token that saved it was revoked"
  ).freeze

  def error(code, message, details = nil)
    { "error" => { "code" => code, "message" => message, "details" => details } }
  end

  def test_the_webhooks_calls_send_the_contracts_requests_and_read_its_answers
    api = StandIn.new(
      # Made (201, with the secret Tasker made, this once), then replaced (200: none).
      "PUT /v1/webhooks/orders" => [[201, ORDERS.merge("secret" => MADE)], [200, ORDERS]],
      "PUT /v1/webhooks/gh" => [201, GITHUB],
      "GET /v1/webhooks" => [200, { "webhooks" => [GITHUB, ORDERS] }],
      "GET /v1/webhooks/orders" => [200, ORDERS],
      "DELETE /v1/webhooks/orders" => [[204, nil], [404, error("webhook_not_found", "no webhook orders")]]
    )
    client = Client.new(url: api.url)

    made = client.put_webhook("orders", { namespace: "shop", key: "/customer", secret: nil })
    assert_kind_of Client::Webhook, made
    assert_equal MADE, made.secret
    assert_equal ["orders", "shop", "generic", "/customer", nil, nil, 300],
                 [made.name, made.namespace, made.format, made.key, made.event, made.id, made.tolerance_seconds]
    assert_equal Time.utc(2026, 11, 30, 9, 0, 0.123456r), made.created_at
    # Replaced: the answer shows no secret.
    replaced = client.put_webhook("orders", { "namespace" => "shop", "key" => "/customer", "tolerance" => 90 })
    assert_nil replaced.secret
    gh = client.put_webhook("gh", { namespace: "ci", format: "github", secret: "s3cret-s3cret-s3cret",
                                    event: "github.any", id: "/head_commit/id", tolerance: "2m" })
    assert_equal ["github", 120, nil], [gh.format, gh.tolerance_seconds, gh.last_received_at]

    assert_equal [gh, replaced], client.list_webhooks
    shown = client.get_webhook("orders")
    assert_equal replaced, shown
    assert_equal [2, Time.utc(2026, 11, 30, 10)], [shown.received, shown.last_received_at]
    assert_nil client.delete_webhook("orders")
    error = assert_raises(Client::NotFoundError) { client.delete_webhook("orders") }
    assert_equal [404, "webhook_not_found"], [error.status, error.code]

    assert_equal [
      ["PUT", "/v1/webhooks/orders", { "namespace" => "shop", "key" => "/customer" }],
      ["PUT", "/v1/webhooks/orders", { "namespace" => "shop", "key" => "/customer", "tolerance" => "90s" }],
      ["PUT", "/v1/webhooks/gh", { "namespace" => "ci", "format" => "github", "secret" => "s3cret-s3cret-s3cret",
                                   "event" => "github.any", "id" => "/head_commit/id", "tolerance" => "2m" }],
      ["GET", "/v1/webhooks", nil],
      ["GET", "/v1/webhooks/orders", nil],
      ["DELETE", "/v1/webhooks/orders", nil],
      ["DELETE", "/v1/webhooks/orders", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end

  def test_the_alerts_calls_send_each_sink_as_the_api_takes_it_and_read_its_answers
    missing = error("alert_not_found", "no alert rule gone")
    invalid = error("invalid_alert", "within: at most 1d", { "field" => "when.within", "problem" => "at most 1d" })
    api = StandIn.new(
      "PUT /v1/alerts/charges" => [[201, CHARGES.merge("secret" => MADE)], [200, CHARGES], [400, invalid]],
      "PUT /v1/alerts/stuck" => [201, STUCK],
      "PUT /v1/alerts/late" => [201, LATE],
      "GET /v1/alerts" => [200, { "alerts" => [CHARGES, LATE, STUCK] }],
      "GET /v1/alerts/charges" => [200, CHARGES],
      "GET /v1/alerts/gone" => [404, missing],
      "DELETE /v1/alerts/charges" => [204, nil],
      "DELETE /v1/alerts/gone" => [404, missing]
    )
    client = Client.new(url: api.url)

    made = client.put_alert("charges", {
                              namespace: "shop", sink: WEBHOOK_SINK, suppress: nil,
                              when: { kind: "failures", template: "charge", count: 5, within: 60, longer_than: nil }
                            })
    assert_kind_of Client::Alert, made
    assert_equal MADE, made.secret
    assert_equal Client::AlertSink.new(kind: "webhook", url: WEBHOOK_SINK["url"]), made.sink
    # The fields it was saved without are nil.
    assert_equal Client::AlertCondition.new(kind: "failures", template: "charge", count: 5, within: "1m"), made.when
    assert_predicate made, :firing?
    assert_equal [6, 900, Time.utc(2026, 11, 30, 10, 0, 1)], [made.observed, made.suppress_seconds, made.checked_at]
    # A given secret (a webhook sink's) is sent; the answer shows none.
    replaced = client.put_alert("charges", { "namespace" => "shop", "when" => { "kind" => "failures" },
                                             "sink" => WEBHOOK_SINK, "secret" => "a-secret-of-our-own",
                                             "suppress" => "15m" })
    assert_nil replaced.secret
    stuck = client.put_alert("stuck", { namespace: "shop", when: { kind: "steps_waiting", longer_than: 600 },
                                        sink: { kind: "slack", url: STUCK["sink"]["url"] }, suppress: 0 })
    assert_equal ["slack", "10m", nil, nil], [stuck.sink.kind, stuck.when.longer_than, stuck.checked_at, stuck.observed]
    refute_predicate stuck, :firing?
    late = client.put_alert("late", { namespace: "shop", when: { kind: "deadline_passed" }, sink: EMAIL_SINK })
    assert_equal ["email", EMAIL_SINK["to"], nil], [late.sink.kind, late.sink.to, late.sink.url]
    assert_equal LATE["last_error"], late.last_error

    assert_equal [replaced, late, stuck], client.list_alerts
    shown = client.get_alert("charges")
    assert_equal replaced, shown
    # An answer's condition and sink are saved again as they are.
    error = assert_raises(Client::InvalidRequestError) do
      client.put_alert("charges", { namespace: shown.namespace, when: shown.when, sink: shown.sink })
    end
    assert_equal [400, "invalid_alert", { "field" => "when.within", "problem" => "at most 1d" }],
                 [error.status, error.code, error.details]
    error = assert_raises(Client::NotFoundError) { client.get_alert("gone") }
    assert_equal [404, "alert_not_found"], [error.status, error.code]
    assert_nil client.delete_alert("charges")
    error = assert_raises(Client::NotFoundError) { client.delete_alert("gone") }
    assert_equal [404, "alert_not_found"], [error.status, error.code]

    assert_equal [
      ["PUT", "/v1/alerts/charges",
       { "namespace" => "shop", "sink" => WEBHOOK_SINK,
         "when" => { "kind" => "failures", "template" => "charge", "count" => 5, "within" => "60s" } }],
      ["PUT", "/v1/alerts/charges",
       { "namespace" => "shop", "when" => { "kind" => "failures" }, "sink" => WEBHOOK_SINK,
         "secret" => "a-secret-of-our-own", "suppress" => "15m" }],
      ["PUT", "/v1/alerts/stuck",
       { "namespace" => "shop", "when" => { "kind" => "steps_waiting", "longer_than" => "600s" },
         "sink" => STUCK["sink"], "suppress" => "0s" }],
      ["PUT", "/v1/alerts/late", { "namespace" => "shop", "when" => { "kind" => "deadline_passed" },
                                   "sink" => EMAIL_SINK }],
      ["GET", "/v1/alerts", nil],
      ["GET", "/v1/alerts/charges", nil],
      ["PUT", "/v1/alerts/charges",
       { "namespace" => "shop", "sink" => WEBHOOK_SINK,
         "when" => { "kind" => "failures", "template" => "charge", "count" => 5, "within" => "1m" } }],
      ["GET", "/v1/alerts/gone", nil],
      ["DELETE", "/v1/alerts/charges", nil],
      ["DELETE", "/v1/alerts/gone", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end

  def test_the_formats_and_kinds_are_the_contracts
    assert_equal %w[generic github stripe], Client::WEBHOOK_FORMATS
    assert_equal %w[dead_letters deadline_passed failures schedule_skipped steps_waiting], Client::ALERT_KINDS.sort
  end
end
