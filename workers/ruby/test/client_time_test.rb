# frozen_string_literal: true

require_relative "client_support"

# The time calls' requests and answers against a stand-in for the API (ClientWire::StandIn, no
# orchestrator): the paths, methods and bodies of the contract, and the records read from its
# answers. ClientWire's records and stand-in are this class's too (ClientTimeWireTest::TASK,
# ClientTimeWireTest::StandIn).
class ClientTimeWireTest < Minitest::Test
  include ClientWire

  Client = Tasker::Client

  def test_the_time_calls_send_the_contracts_requests_and_read_its_answers
    task_path = "/v1/tasks/#{TASK_ID}"
    schedule_path = "/v1/schedules/ruby_examples/nightly%20report"
    api = StandIn.new(
      "POST /v1/tasks" => [201, TASK],
      "GET #{task_path}/steps" => [200, { "steps" => [WAIT_STEP], "next" => nil }],
      "POST #{task_path}/signals/approved" => [201, SIGNAL],
      "GET #{task_path}/signals" => [200, { "signals" => [SIGNAL] }],
      "GET /v1/schedules" => [200, { "schedules" => [SCHEDULE] }],
      "GET #{schedule_path}" => [200, SCHEDULE.merge("upcoming" => ["2026-11-27T01:30:00Z"])],
      "POST /v1/schedules" => [201, SCHEDULE],
      "PATCH #{schedule_path}" => [200, SCHEDULE],
      "DELETE #{schedule_path}" => [204, nil],
      "POST #{schedule_path}/pause" => [200, SCHEDULE.merge("paused" => true, "note" => "why")],
      "POST #{schedule_path}/resume" => [200, SCHEDULE],
      "POST #{schedule_path}/trigger" => [201, TASK.merge("state" => "running")],
      "POST #{schedule_path}/backfill" => [200, { "created" => 1, "existing" => 1, "task_ids" => %w[a b] }]
    )
    client = Client.new(url: api.url)

    context = { "value" => 6 }
    task = client.create_task("ruby_examples", "linear", context, run_at: Time.new(2026, 11, 27, 3, 30, 0, "+01:00"))
    assert_equal "scheduled", task.state
    refute_predicate task, :terminal?
    assert_equal Time.utc(2026, 11, 27, 2, 30), task.run_at
    ["10m", 600, 600.0, 1.5].each { |delay| client.create_task("ruby_examples", "linear", context, delay: delay) }
    assert_raises(ArgumentError) { client.create_task("ruby_examples", "linear", delay: :soon) }

    step = client.steps(task.id).first
    assert_equal Client::StepWait.new(kind: "signal", signal: "approved", until: Time.utc(2026, 12, 3, 9),
                                      on_timeout: "fail"), step.wait
    sent = client.signal(task.id, "approved", { "approved_by" => "ops" }, signal_id: "approval-1")
    assert_equal ["approval-1", { "approved_by" => "ops" }, Time.utc(2026, 11, 26, 9, 0, 1), nil],
                 [sent.signal_id, sent.payload, sent.received_at, sent.consumed_at]
    client.signal(task.id, "approved")
    assert_equal [sent], client.signals(task.id)

    listed = client.list_schedules(namespace: "ruby_examples")
    assert_equal ["nightly report"], listed.map(&:name)
    assert_nil listed.first.upcoming
    assert_equal listed, client.list_schedules
    assert_equal [Time.utc(2026, 11, 27, 1, 30)], client.get_schedule("ruby_examples", "nightly report").upcoming
    definition = { namespace: "ruby_examples", name: "nightly report", template: "linear", cron: "30 2 * * *" }
    assert_equal listed.first, client.apply_schedule(definition)
    assert_equal listed.first, client.update_schedule("ruby_examples", "nightly report", { cron: "0 3 * * *" })
    assert_nil client.delete_schedule("ruby_examples", "nightly report")
    assert_equal "why", client.pause_schedule("ruby_examples", "nightly report", note: "why").note
    assert_predicate client.pause_schedule("ruby_examples", "nightly report"), :paused?
    refute_predicate client.resume_schedule("ruby_examples", "nightly report"), :paused?
    assert_equal "running", client.trigger_schedule("ruby_examples", "nightly report").state
    backfill = client.backfill_schedule("ruby_examples", "nightly report", Time.utc(2026, 1, 1), "2026-01-02T00:00:00Z")
    assert_equal Client::Backfill.new(created: 1, existing: 1, task_ids: %w[a b]), backfill
    error = assert_raises(Client::NotFoundError) { client.get_schedule("ruby_examples", "missing") }
    assert_equal "no_route", error.code

    create = { "namespace" => "ruby_examples", "name" => "linear", "context" => { "value" => 6 } }
    assert_equal [
      ["POST", "/v1/tasks", create.merge("run_at" => "2026-11-27T02:30:00.000000Z")],
      *%w[10m 600s 600s 1500ms].map { |d| ["POST", "/v1/tasks", create.merge("delay" => d)] },
      ["GET", "#{task_path}/steps?limit=1000", nil],
      ["POST", "#{task_path}/signals/approved", { "signal_id" => "approval-1", "payload" => sent.payload }],
      ["POST", "#{task_path}/signals/approved", {}],
      ["GET", "#{task_path}/signals", nil],
      ["GET", "/v1/schedules?namespace=ruby_examples", nil],
      ["GET", "/v1/schedules", nil],
      ["GET", schedule_path, nil],
      ["POST", "/v1/schedules", definition.transform_keys(&:to_s)],
      ["PATCH", schedule_path, { "cron" => "0 3 * * *" }],
      ["DELETE", schedule_path, nil],
      ["POST", "#{schedule_path}/pause", { "note" => "why" }],
      ["POST", "#{schedule_path}/pause", {}],
      ["POST", "#{schedule_path}/resume", nil],
      ["POST", "#{schedule_path}/trigger", nil],
      ["POST", "#{schedule_path}/backfill",
       { "from" => "2026-01-01T00:00:00.000000Z", "to" => "2026-01-02T00:00:00Z" }],
      ["GET", "/v1/schedules/ruby_examples/missing", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end
end
