# frozen_string_literal: true

require_relative "client_support"

# The fair-sharing calls' requests and answers against the stand-in of client_support.rb: a
# task's priority, a throttled step's throttle and limits, the concurrency and rate limits, and
# pausing and resuming a rate key.
class ClientFlowWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  TASK = ClientWire::TASK
  TASK_PATH = "/v1/tasks/#{ClientWire::TASK_ID}".freeze
  THROTTLED_STEP = ClientWire::WAIT_STEP.merge(
    "id" => "019a0000-0000-7000-8000-000000000030", "name" => "charge", "handler" => "charge",
    "step_type" => "standard", "state" => "throttled", "attempt" => 0, "max_attempts" => 3, "wait" => nil,
    "namespace" => "ruby_examples", "child" => nil, "unserved" => false,
    "throttle" => { "kind" => "rate", "key" => "stripe", "limit" => 100, "since" => "2026-11-26T09:00:00Z",
                    "until" => "2026-11-26T09:00:01.5Z" },
    "limits" => { "concurrency" => { "key" => "ruby_examples/charge_customer:c-1", "limit" => 2 },
                  "rate" => { "key" => "stripe", "limit" => 100, "per_ms" => 1000, "burst" => 20 } }
  ).freeze
  CONCURRENCY_LIMIT = { "key" => "ruby_examples/charge_customer:c-1", "limit" => 2, "in_use" => 2,
                        "throttled" => 1 }.freeze
  RATE_LIMIT = { "key" => "stripe", "limit" => 100, "per_ms" => 1000, "burst" => 20, "paused_until" => nil,
                 "pause_note" => nil, "throttled" => 3 }.freeze
  PAUSED_UNTIL = "2026-11-26T10:00:00Z"
  PAUSED = RATE_LIMIT.merge("paused_until" => PAUSED_UNTIL, "pause_note" => "incident").freeze
  ODD = "acct:42/eu" # a key from a context value: one path segment, percent-encoded
  ODD_PATH = "/v1/rate-limits/acct%3A42%2Feu/pause"

  def test_the_flow_calls_send_the_contracts_requests_and_read_its_answers
    api = StandIn.new(
      "POST /v1/tasks" => [201, TASK.merge("priority" => "high")],
      "GET #{TASK_PATH}/steps" => [200, { "steps" => [THROTTLED_STEP], "next" => nil }],
      "GET /v1/concurrency-limits" => [200, { "limits" => [CONCURRENCY_LIMIT] }],
      "GET /v1/rate-limits" => [200, { "limits" => [RATE_LIMIT] }],
      "POST /v1/rate-limits/stripe/pause" => [200, PAUSED],
      "DELETE /v1/rate-limits/stripe/pause" => [200, RATE_LIMIT],
      "POST #{ODD_PATH}" => [200, PAUSED.merge("key" => ODD)],
      "DELETE #{ODD_PATH}" => [404, { "error" => { "code" => "unknown_rate_limit", "message" => ODD } }]
    )
    client = Client.new(url: api.url)

    task = client.create_task("ruby_examples", "linear", { "value" => 6 }, priority: "high")
    assert_equal "high", task.priority
    client.create_task("ruby_examples", "linear", { "value" => 6 })
    # A task from a server before priorities: normal.
    assert_equal "normal", Client::Task.from_json(TASK).priority
    assert_equal %w[high normal low], Client::PRIORITIES

    step, = client.steps(task.id)
    assert_predicate step, :throttled?
    assert_equal Client::StepThrottle.new(kind: "rate", key: "stripe", limit: 100, since: Time.utc(2026, 11, 26, 9),
                                          until: Time.utc(2026, 11, 26, 9, 0, 1.5)), step.throttle
    assert_equal Client::StepLimits.new(
      concurrency: Client::StepConcurrencyLimit.new(key: "ruby_examples/charge_customer:c-1", limit: 2),
      rate: Client::StepRateLimit.new(key: "stripe", limit: 100, per_ms: 1000, burst: 20)
    ), step.limits
    concurrency_wait = { "kind" => "concurrency", "key" => "k", "limit" => 2, "since" => "2026-11-26T09:00:00Z",
                         "until" => nil }
    only_concurrency = { "concurrency" => { "key" => "k", "limit" => 2 }, "rate" => nil }
    waiting = Client::Step.from_json(THROTTLED_STEP.merge("throttle" => concurrency_wait, "limits" => only_concurrency))
    assert_nil waiting.throttle.until
    assert_equal Client::StepLimits.new(concurrency: Client::StepConcurrencyLimit.new(key: "k", limit: 2), rate: nil),
                 waiting.limits
    # A step from a server before limits.
    older = Client::Step.from_json(ClientWire::WAIT_STEP)
    assert_equal [nil, nil], [older.throttle, older.limits]
    refute_predicate older, :throttled?

    assert_equal [Client::ConcurrencyLimit.new(key: "ruby_examples/charge_customer:c-1", limit: 2, in_use: 2,
                                               throttled: 1)], client.concurrency_limits
    assert_equal 1, client.concurrency_limits(key_prefix: "ruby_examples/charge_customer:").size
    rate, = client.rate_limits
    assert_equal Client::RateLimit.new(key: "stripe", limit: 100, per_ms: 1000, burst: 20, paused_until: nil,
                                       pause_note: nil, throttled: 3), rate
    paused = client.pause_rate_limit("stripe", Time.new(2026, 11, 26, 11, 0, 0, "+01:00"), note: "incident")
    assert_equal [Time.utc(2026, 11, 26, 10), "incident"], [paused.paused_until, paused.pause_note]
    assert_equal paused, client.pause_rate_limit("stripe", PAUSED_UNTIL)
    assert_equal rate, client.resume_rate_limit("stripe")
    assert_equal ODD, client.pause_rate_limit(ODD, PAUSED_UNTIL).key
    unknown = assert_raises(Client::NotFoundError) { client.resume_rate_limit(ODD) }
    assert_equal [404, "unknown_rate_limit"], [unknown.status, unknown.code]

    assert_equal [
      ["POST", "/v1/tasks",
       { "namespace" => "ruby_examples", "name" => "linear", "context" => { "value" => 6 }, "priority" => "high" }],
      ["POST", "/v1/tasks", { "namespace" => "ruby_examples", "name" => "linear", "context" => { "value" => 6 } }],
      ["GET", "#{TASK_PATH}/steps?limit=1000", nil],
      ["GET", "/v1/concurrency-limits", nil],
      ["GET", "/v1/concurrency-limits?key=ruby_examples%2Fcharge_customer%3A", nil],
      ["GET", "/v1/rate-limits", nil],
      ["POST", "/v1/rate-limits/stripe/pause", { "until" => "2026-11-26T10:00:00.000000Z", "note" => "incident" }],
      ["POST", "/v1/rate-limits/stripe/pause", { "until" => PAUSED_UNTIL }],
      ["DELETE", "/v1/rate-limits/stripe/pause", nil],
      ["POST", ODD_PATH, { "until" => PAUSED_UNTIL }],
      ["DELETE", ODD_PATH, nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end

  # `conformance-client URL flow`: four lines, a label and one line of JSON each, against the
  # stand-in (the conformance suite runs it against a real orchestrator).
  def test_the_conformance_clients_flow_mode_prints_what_it_read_and_did
    flow_path = "/v1/rate-limits/conformance-flow/pause"
    paused = PAUSED.merge("key" => "conformance-flow", "paused_until" => "2026-11-26T10:00:00.123456Z",
                          "pause_note" => "conformance")
    api = StandIn.new(
      "GET /v1/rate-limits" => [200, { "limits" => [RATE_LIMIT.merge("key" => "z"), RATE_LIMIT] }],
      "GET /v1/concurrency-limits" => [200, { "limits" => [CONCURRENCY_LIMIT] }],
      "POST #{flow_path}" => [200, paused],
      "DELETE #{flow_path}" => [200, RATE_LIMIT.merge("key" => "conformance-flow")]
    )
    started = Time.now
    script = File.expand_path("../fixtures/conformance_client.rb", __dir__)
    out, err, status = Open3.capture3(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), script, api.url, "flow")
    assert_predicate status, :success?, err
    lines = out.lines(chomp: true).map { |line| line.split(" ", 2) }
    assert_equal %w[rate_limits concurrency_limits paused resumed], lines.map(&:first)
    read = lines.to_h { |label, json| [label, JSON.parse(json)] }
    assert_equal [RATE_LIMIT, RATE_LIMIT.merge("key" => "z")], read["rate_limits"] # by key
    assert_equal [CONCURRENCY_LIMIT], read["concurrency_limits"]
    assert_equal paused, read["paused"]
    assert_equal RATE_LIMIT.merge("key" => "conformance-flow"), read["resumed"]
    (_, _, pause), = api.requests.select { |method, _, _| method == "POST" }
    assert_equal "conformance", pause["note"]
    assert_in_delta started + 3600, Time.iso8601(pause["until"]), 60
    assert_equal [["GET", "/v1/rate-limits"], ["GET", "/v1/concurrency-limits"], ["POST", flow_path],
                  ["DELETE", flow_path]], api.requests.map { |method, target, _| [method, target] }
  ensure
    api&.stop
  end
end

