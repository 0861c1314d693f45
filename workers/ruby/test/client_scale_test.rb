# frozen_string_literal: true

require_relative "client_support"

# Bulk create, purge and a purged task against the stand-in of client_support.rb, and the
# conformance client's `scale` mode.
class ClientScaleWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  NS = "ruby_examples"
  PURGED_ID = "019a0000-0000-7000-8000-000000000040"
  PURGED = { "error" => {
    "code" => "task_purged", "message" => "task #{PURGED_ID} was purged at 2026-11-27T06:00:00Z (retention)",
    "details" => { "task_id" => PURGED_ID, "state" => "complete", "purged_at" => "2026-11-27T06:00:00Z" }
  } }.freeze
  # As the server answers: a refused item has no task_id, a created one no error.
  BATCH = { "created" => 2, "existing" => 1, "refused" => 1, "results" => [
    { "index" => 0, "status" => "created", "task_id" => "019a0000-0000-7000-8000-000000000041" },
    { "index" => 1, "status" => "created", "task_id" => "019a0000-0000-7000-8000-000000000042" },
    { "index" => 2, "status" => "existing", "task_id" => "019a0000-0000-7000-8000-000000000043" },
    { "index" => 3, "status" => "refused",
      "error" => { "code" => "unknown_template", "message" => "no template ruby_examples/nope" } }
  ] }.freeze
  PURGE_ANSWER = {
    "dry_run" => false, "older_than" => "30d", "before" => "2026-10-28T06:00:00Z",
    "states" => %w[complete error cancelled], "tasks" => 1234,
    "by_state" => { "complete" => 1200, "error" => 30, "cancelled" => 4 }, "rows" => 45_678,
    "bytes" => 12_345_678, "more" => false
  }.freeze
  DRY_RUN = PURGE_ANSWER.merge("dry_run" => true, "older_than" => "1h", "states" => ["complete"],
                               "by_state" => { "complete" => 3 }, "tasks" => 3, "rows" => nil, "bytes" => nil).freeze
  RETENTION = {
    "complete" => "30d", "error" => "90d", "cancelled" => "30d", "tombstones" => "90d",
    "interval_ms" => 60_000, "batch" => 200, "busy_percent" => 5,
    "last_purged_at" => "2026-11-27T10:02:03.123456Z"
  }.freeze

  def test_the_scale_calls_send_the_contracts_requests_and_read_its_answers
    duplicate = { "error" => { "code" => "duplicate_idempotency_key", "message" => "two items share the key k",
                               "details" => { "key" => "k", "indexes" => [0, 1] } } }
    too_large = { "error" => { "code" => "batch_too_large", "message" => "10001 tasks, at most 10000",
                               "details" => { "tasks" => 10_001, "limit" => 10_000 } } }
    invalid_state = { "error" => { "code" => "invalid_state", "message" => "running is not finished",
                                   "details" => { "state" => "running" } } }
    api = StandIn.new(
      "POST /v1/tasks:batch" => [[200, BATCH], [400, duplicate], [413, too_large]],
      "POST /v1/purge" => [[200, PURGE_ANSWER], [200, DRY_RUN], [400, invalid_state],
                           [403, { "error" => { "code" => "forbidden", "message" => "an operator's token" } }]]
    )
    client = Client.new(url: api.url)
    items = [
      { "namespace" => NS, "name" => "linear", "context" => { "value" => 1 }, "idempotency_key" => "k-1" },
      { namespace: NS, name: "linear", context: { "value" => 2 }, priority: "high",
        run_at: Time.new(2026, 11, 27, 3, 30, 0, "+01:00"), version: nil },
      { "namespace" => NS, "name" => "linear", "delay" => 600, "idempotency_key" => "k-3" },
      { "namespace" => NS, "name" => "nope", "run_at" => "2026-11-27T02:30:00Z", "delay" => "10m" }
    ]

    batch = client.create_tasks(items)
    assert_equal Client::BatchCreated.new(created: 2, existing: 1, refused: 1, results: [
      Client::BatchItemResult.new(index: 0, status: "created", task_id: "019a0000-0000-7000-8000-000000000041"),
      Client::BatchItemResult.new(index: 1, status: "created", task_id: "019a0000-0000-7000-8000-000000000042"),
      Client::BatchItemResult.new(index: 2, status: "existing", task_id: "019a0000-0000-7000-8000-000000000043"),
      Client::BatchItemResult.new(index: 3, status: "refused", task_id: nil, error: Client::BatchItemError.new(
        code: "unknown_template", message: "no template ruby_examples/nope", details: nil
      ))
    ]), batch
    assert_equal [[true, false, false], [false, true, false], [false, false, true]],
                 batch.results.values_at(0, 2, 3).map { |r| [r.created?, r.existing?, r.refused?] }
    refused = assert_raises(Client::InvalidRequestError) { client.create_tasks([items[0], items[0]]) }
    assert_equal [400, "duplicate_idempotency_key", { "key" => "k", "indexes" => [0, 1] }],
                 [refused.status, refused.code, refused.details]
    large = assert_raises(Client::InvalidRequestError) { client.create_tasks([items[2]]) }
    assert_equal [413, "batch_too_large", { "tasks" => 10_001, "limit" => 10_000 }],
                 [large.status, large.code, large.details]

    purged = client.purge(older_than: "30d")
    assert_equal Client::PurgeResult.new(
      dry_run: false, older_than: "30d", before: Time.utc(2026, 10, 28, 6), states: %w[complete error cancelled],
      tasks: 1234, by_state: { "complete" => 1200, "error" => 30, "cancelled" => 4 }, rows: 45_678,
      bytes: 12_345_678, more: false
    ), purged
    refute_predicate purged, :dry_run?
    refute_predicate purged, :more?
    would = client.purge(older_than: "1h", states: ["complete"], dry_run: true, limit: 500)
    assert_predicate would, :dry_run?
    assert_equal [3, nil, nil], [would.tasks, would.rows, would.bytes]
    state = assert_raises(Client::InvalidRequestError) { client.purge(older_than: "30d", states: ["running"]) }
    assert_equal ["invalid_state", { "state" => "running" }], [state.code, state.details]
    forbidden = assert_raises(Client::AuthError) { client.purge(older_than: "30d") }
    assert_equal [403, "forbidden"], [forbidden.status, forbidden.code]
    assert_equal %w[complete error cancelled], Client::PURGE_STATES

    wire = [
      { "namespace" => NS, "name" => "linear", "context" => { "value" => 1 }, "idempotency_key" => "k-1" },
      # nil left out, a Time in UTC as create_task sends it.
      { "namespace" => NS, "name" => "linear", "context" => { "value" => 2 }, "priority" => "high",
        "run_at" => "2026-11-27T02:30:00.000000Z" },
      { "namespace" => NS, "name" => "linear", "delay" => "600s", "idempotency_key" => "k-3" },
      { "namespace" => NS, "name" => "nope", "run_at" => "2026-11-27T02:30:00Z", "delay" => "10m" }
    ]
    assert_equal [
      ["POST", "/v1/tasks:batch", { "tasks" => wire }],
      ["POST", "/v1/tasks:batch", { "tasks" => [wire[0], wire[0]] }],
      ["POST", "/v1/tasks:batch", { "tasks" => [wire[2]] }],
      # Only the fields given; dry_run always.
      ["POST", "/v1/purge", { "older_than" => "30d", "dry_run" => false }],
      ["POST", "/v1/purge", { "older_than" => "1h", "states" => ["complete"], "dry_run" => true, "limit" => 500 }],
      ["POST", "/v1/purge", { "older_than" => "30d", "states" => ["running"], "dry_run" => false }],
      ["POST", "/v1/purge", { "older_than" => "30d", "dry_run" => false }]
    ], api.requests
    # The item hashes given are left as they were.
    assert_equal Time.new(2026, 11, 27, 3, 30, 0, "+01:00"), items[1][:run_at]
  ensure
    client&.close
    api&.stop
  end

  def test_a_purged_task_is_task_purged_everywhere_and_wait_stops_at_once
    path = "/v1/tasks/#{PURGED_ID}"
    routes = ["GET #{path}", "GET #{path}/steps", "GET #{path}/history", "POST #{path}/cancel",
              "POST #{path}/retry", "POST #{path}/signals/approved", "GET #{path}/signals"]
    api = StandIn.new(routes.to_h { |route| [route, [410, PURGED]] })
    client = Client.new(url: api.url)
    calls = [
      -> { client.get_task(PURGED_ID) }, -> { client.steps(PURGED_ID) }, -> { client.history(PURGED_ID) },
      -> { client.cancel(PURGED_ID) }, -> { client.retry(PURGED_ID) },
      -> { client.signal(PURGED_ID, "approved") }, -> { client.signals(PURGED_ID) }
    ]
    calls.each { |call| purged?(assert_raises(Client::TaskPurgedError) { call.call }) }

    # wait stops at the first answer: one request, no retry, no waiting out its timeout.
    before = api.requests.size
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    purged?(assert_raises(Client::TaskPurgedError) { client.wait(PURGED_ID, 60) })
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 5
    assert_equal [["GET", path]],
                 api.requests.drop(before).map { |method, target, _| [method, target.split("?").first] }
  ensure
    client&.close
    api&.stop
  end

  def test_the_retention_call_reads_the_policy
    kept = RETENTION.merge("complete" => "never", "tombstones" => "1h30m", "busy_percent" => 100,
                           "last_purged_at" => nil)
    api = StandIn.new("GET /v1/retention" => [[200, RETENTION], [200, kept],
                                              [401, { "error" => { "code" => "unauthorized",
                                                                   "message" => "a valid API token" } }]])
    client = Client.new(url: api.url)

    policy = client.retention
    assert_equal Client::RetentionPolicy.new(
      complete: "30d", error: "90d", cancelled: "30d", tombstones: "90d", interval_ms: 60_000, batch: 200,
      busy_percent: 5, last_purged_at: Time.utc(2026, 11, 27, 10, 2, 3, 123_456)
    ), policy
    assert_equal Client::RetentionPolicy.new(
      complete: "never", error: "90d", cancelled: "30d", tombstones: "1h30m", interval_ms: 60_000, batch: 200,
      busy_percent: 100, last_purged_at: nil
    ), client.retention
    refused = assert_raises(Client::AuthError) { client.retention }
    assert_equal [401, "unauthorized"], [refused.status, refused.code]
    # A plain GET, no query, no body.
    assert_equal [["GET", "/v1/retention", nil]] * 3, api.requests
  ensure
    client&.close
    api&.stop
  end

  # `conformance-client URL scale NAMESPACE NAME CONTEXT_JSON KEY_PREFIX`: four lines, a label and
  # one line of compact JSON each, against the stand-in (the conformance suite runs it against a
  # real orchestrator).
  def test_the_conformance_clients_scale_mode_prints_what_it_read_and_did
    refused = { "index" => 2, "status" => "refused",
                "error" => { "code" => "unknown_template", "message" => "no such template" } }
    created = [{ "index" => 0, "status" => "created", "task_id" => "019a0000-0000-7000-8000-000000000041" },
               { "index" => 1, "status" => "created", "task_id" => "019a0000-0000-7000-8000-000000000042" }]
    first = { "created" => 2, "existing" => 0, "refused" => 1, "results" => [*created, refused] }
    second = { "created" => 0, "existing" => 2, "refused" => 1,
               "results" => [*created.map { |r| r.merge("status" => "existing") }, refused] }
    api = StandIn.new("POST /v1/tasks:batch" => [[200, first], [200, second]], "POST /v1/purge" => [200, DRY_RUN],
                      "GET /v1/retention" => [200, RETENTION])
    script = File.expand_path("../fixtures/conformance_client.rb", __dir__)
    out, err, status = Open3.capture3(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), script, api.url,
                                      "scale", NS, "linear", '{"value": 6}', "conformance-scale-7")
    assert_predicate status, :success?, err
    assert_equal [
      'first ["created","created","refused:unknown_template"]',
      'second ["existing","existing","refused:unknown_template"]',
      'purge {"dry_run":true,"states":["complete"],"more":false,"rows":null}',
      'retention {"complete":"30d","error":"90d","cancelled":"30d","busy_percent":5}'
    ], out.lines(chomp: true)
    item = { "namespace" => NS, "name" => "linear", "context" => { "value" => 6 } }
    batch = { "tasks" => [
      item.merge("idempotency_key" => "conformance-scale-7-1"),
      item.merge("idempotency_key" => "conformance-scale-7-2"),
      { "namespace" => NS, "name" => "no_such_template", "idempotency_key" => "conformance-scale-7-3" }
    ] }
    assert_equal [
      ["POST", "/v1/tasks:batch", batch],
      ["POST", "/v1/tasks:batch", batch],
      ["POST", "/v1/purge", { "older_than" => "1h", "states" => ["complete"], "dry_run" => true }],
      ["GET", "/v1/retention", nil]
    ], api.requests
  ensure
    api&.stop
  end

  private

  def purged?(error)
    assert_kind_of Client::NotFoundError, error
    assert_equal [410, "task_purged", PURGED["error"]["details"]], [error.status, error.code, error.details]
    assert_match(/\Atask #{PURGED_ID} was purged at /, error.message)
  end
end
