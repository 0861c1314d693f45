# frozen_string_literal: true

require_relative "client_support"

# The events calls (Client#send_event, #send_events, #events, #event) against the stand-in of
# client_support.rb: the requests the contract describes and the records read from its answers
# (tests/fast/templates/events.rs checks what a real orchestrator starts).
class ClientEventsWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  EVENT_ID = "019a0000-0000-7000-8000-0000000000e1"
  TASK_ID = "019a0000-0000-7000-8000-0000000000e2"
  DATA = { "id" => 42, "total" => 180 }.freeze
  FORBIDDEN = { "code" => "forbidden", "message" => "not your namespace", "details" => nil }.freeze
  EVENT = {
    "id" => EVENT_ID, "namespace" => "shop", "name" => "order.created", "key" => "customer-7",
    "sender_id" => "order-42-created", "data" => DATA, "received_at" => "2026-11-30T09:00:00.123456Z",
    "started" => [
      { "template" => "shop/fulfil@2", "task_id" => TASK_ID, "debounced" => false, "deduplicated" => false,
        "refused" => nil },
      { "template" => "shop/audit@1", "task_id" => nil, "debounced" => false, "deduplicated" => false,
        "refused" => FORBIDDEN }
    ]
  }.freeze
  # An event that matched nothing, sent without key or id.
  BARE = {
    "id" => "019a0000-0000-7000-8000-0000000000e0", "namespace" => "shop", "name" => "order.viewed", "key" => nil,
    "sender_id" => nil, "data" => {}, "received_at" => "2026-11-30T08:59:00Z", "started" => []
  }.freeze
  SENT = {
    "created" => 1, "existing" => 1, "refused" => 1,
    "results" => [
      { "index" => 0, "status" => "created", "event_id" => EVENT_ID, "task_ids" => [TASK_ID] },
      { "index" => 1, "status" => "existing", "event_id" => EVENT_ID, "task_ids" => [TASK_ID] },
      { "index" => 2, "status" => "refused",
        "error" => { "code" => "invalid_event_name", "message" => "not a name", "details" => nil } }
    ]
  }.freeze

  def test_the_events_calls_send_the_contracts_requests_and_read_its_answers
    api = StandIn.new(
      # A new event (201), the same id again (200: the one stored first), one without key or id,
      # then two refusals.
      "POST /v1/events" => [
        [201, EVENT], [200, EVENT], [201, BARE],
        [403, { "error" => { "code" => "forbidden", "message" => "the token does not cover bank" } }],
        [400, { "error" => { "code" => "invalid_event_name", "message" => "not a name" } }]
      ],
      "POST /v1/events:batch" => [200, SENT],
      "GET /v1/events/log" => [
        [200, { "events" => [EVENT], "next_before" => EVENT_ID }],
        [200, { "events" => [BARE], "next_before" => nil }]
      ],
      "GET /v1/events/#{EVENT_ID}" => [200, EVENT]
    )
    client = Client.new(url: api.url)

    sent = client.send_event("shop", "order.created", DATA, key: "customer-7", id: "order-42-created")
    assert_kind_of Client::Event, sent
    assert_equal [EVENT_ID, "shop", "order.created", "customer-7", "order-42-created", DATA],
                 [sent.id, sent.namespace, sent.name, sent.key, sent.sender_id, sent.data]
    assert_equal Time.utc(2026, 11, 30, 9, 0, 0.123456r), sent.received_at
    plain = { debounced: false, deduplicated: false }
    assert_equal [Client::EventStart.new(template: "shop/fulfil@2", task_id: TASK_ID, refused: nil, **plain),
                  Client::EventStart.new(template: "shop/audit@1", task_id: nil,
                                         refused: Client::BatchItemError.from_json(FORBIDDEN), **plain)],
                 sent.started
    # A repeat answers the event stored the first time.
    assert_equal sent, client.send_event("shop", "order.created", DATA, id: "order-42-created")
    viewed = client.send_event("shop", "order.viewed")
    assert_equal [nil, nil, {}, []], [viewed.key, viewed.sender_id, viewed.data, viewed.started]

    batch = client.send_events([
                                 { namespace: "shop", name: "order.created", data: DATA, id: "order-42-created" },
                                 { "namespace" => "shop", "name" => "order.created", "id" => "order-42-created",
                                   "key" => nil },
                                 { namespace: "shop", name: "not a name" }
                               ])
    assert_equal [1, 1, 1], [batch.created, batch.existing, batch.refused]
    assert_equal [[0, "created", true], [1, "existing", true], [2, "refused", true]],
                 batch.results.map { |r| [r.index, r.status, r.public_send(:"#{r.status}?")] }
    assert_equal [[TASK_ID], [TASK_ID], []], batch.results.map(&:task_ids)
    assert_nil batch.results.last.event_id
    assert_equal "invalid_event_name", batch.results.last.error.code

    page = client.events(namespace: "shop", name: "order.created", limit: 1)
    assert_equal [[sent], EVENT_ID], [page.events, page.next_before]
    last = client.events(before: page.next_before)
    assert_equal [[viewed], nil], [last.events, last.next_before]
    assert_equal sent, client.event(EVENT_ID)
    error = assert_raises(Client::NotFoundError) { client.event(TASK_ID) }
    assert_equal [404, "no_route"], [error.status, error.code]
    error = assert_raises(Client::AuthError) { client.send_event("bank", "order.created") }
    assert_equal [403, "forbidden"], [error.status, error.code]
    error = assert_raises(Client::InvalidRequestError) { client.send_event("shop", "not a name") }
    assert_equal [400, "invalid_event_name"], [error.status, error.code]

    created = { "namespace" => "shop", "name" => "order.created", "data" => DATA, "id" => "order-42-created" }
    assert_equal [
      ["POST", "/v1/events", created.merge("key" => "customer-7")],
      ["POST", "/v1/events", created],
      ["POST", "/v1/events", { "namespace" => "shop", "name" => "order.viewed" }],
      ["POST", "/v1/events:batch", { "events" => [
        created, created.except("data"), { "namespace" => "shop", "name" => "not a name" }
      ] }],
      ["GET", "/v1/events/log?namespace=shop&name=order.created&limit=1", nil],
      ["GET", "/v1/events/log?before=#{EVENT_ID}", nil],
      ["GET", "/v1/events/#{EVENT_ID}", nil],
      ["GET", "/v1/events/#{TASK_ID}", nil],
      ["POST", "/v1/events", { "namespace" => "bank", "name" => "order.created" }],
      ["POST", "/v1/events", { "namespace" => "shop", "name" => "not a name" }]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end

  def test_start_controls_and_a_deadline_are_sent_as_the_api_takes_them_and_a_purged_key_raises
    task = ClientWire::TASK
    purged = { "code" => "deduplicated", "message" => "task #{TASK_ID} was purged",
               "details" => { "task_id" => TASK_ID, "until" => "2026-12-01T09:00:00Z" } }
    batch = { "created" => 1, "existing" => 0, "refused" => 0,
              "results" => [{ "index" => 0, "status" => "created", "task_id" => TASK_ID }] }
    limited = task.merge("deadline" => { "within_ms" => 90_000, "action" => "cancel", "at" => nil,
                                         "passed_at" => nil })
    api = StandIn.new("POST /v1/tasks" => [[201, task], [200, task], [409, { "error" => purged }],
                                           [201, limited]],
                      "POST /v1/tasks:batch" => [200, batch])
    client = Client.new(url: api.url)
    client.create_task("ns", "linear", { "value" => 6 },
                       debounce: { key: "customer-7", period: 5, max: "1m", mode: "leading" })
    client.create_task("ns", "linear", { "value" => 6 }, dedupe: { key: "invoice-1", ttl: "24h" })
    error = assert_raises(Client::ConflictError) do
      client.create_task("ns", "linear", { "value" => 6 }, dedupe: { key: "invoice-1", ttl: "24h" })
    end
    assert_equal [409, "deduplicated", purged["details"]], [error.status, error.code, error.details]
    client.create_tasks([{ namespace: "ns", name: "linear", dedupe: { key: "invoice-2", ttl: 90 } }])
    deadline = client.create_task("ns", "linear", { "value" => 6 }, deadline: { within: 90, action: "cancel" }).deadline
    assert_equal [90_000, "cancel", nil], [deadline.within_ms, deadline.action, deadline.at]
    base = { "namespace" => "ns", "name" => "linear", "context" => { "value" => 6 } }
    dedupe = base.merge("dedupe" => { "key" => "invoice-1", "ttl" => "24h" })
    assert_equal [
      ["POST", "/v1/tasks", base.merge("debounce" => { "key" => "customer-7", "period" => "5s", "max" => "1m",
                                                       "mode" => "leading" })],
      ["POST", "/v1/tasks", dedupe],
      ["POST", "/v1/tasks", dedupe],
      ["POST", "/v1/tasks:batch", { "tasks" => [{ "namespace" => "ns", "name" => "linear",
                                                  "dedupe" => { "key" => "invoice-2", "ttl" => "90s" } }] }],
      ["POST", "/v1/tasks", base.merge("deadline" => { "within" => "90s", "action" => "cancel" })]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end
end
