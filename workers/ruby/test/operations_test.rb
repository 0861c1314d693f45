# frozen_string_literal: true

require_relative "client_support"

# Operations by filter (Client::Operations) against a real orchestrator, with a Ruby worker
# running the ruby_examples fixture templates in this process. Nothing sleeps but
# #wait_operation's polls.
class OperationsTest < Minitest::Test
  include TestSupport
  extend TestSupport::Cluster::Shared

  Client = Tasker::Client
  NAMESPACE = "ruby_examples"

  def self.start_cluster
    TestSupport::Cluster.new(templates: FIXTURE_TEMPLATES, registry: Tasker.registry)
  end

  def client
    @client ||= self.class.cluster.client
  end

  # +n+ tasks of retry_then_succeed in error: `flaky` has three attempts and succeeds on the
  # fourth, so a retry (three more) completes them.
  def failed_tasks(run, count)
    ids = Array.new(count) do
      client.create_task(NAMESPACE, "retry_then_succeed", { "succeed_on_attempt" => 4, "run" => run }).id
    end
    ids.each { |id| assert_equal "error", client.wait(id, 30).state }
    ids
  end

  def test_a_retry_by_filter_counts_acts_on_every_failed_task_and_completes_them
    run = SecureRandom.uuid
    ids = failed_tasks(run, 3)
    filter = { namespace: NAMESPACE, name: "retry_then_succeed", step: "flaky", error_kind: "transient",
               context: { "run" => run }, created_after: Time.now - 3600 }

    count = client.count_operation("retry", filter)
    assert_kind_of Client::OperationCount, count
    assert_equal [3, ids.sort], [count.matched, count.sample.sort]
    assert_equal "error", count.filter.state, "retry acts on tasks in error"
    mine = client.operations.operations.select { |o| o.filter.context == { "run" => run } }
    assert_empty mine, "a dry run starts none"

    started = client.start_operation("retry", filter, reason: "upstream fixed", by: "user:ruby-test")
    assert_kind_of Client::Operation, started
    assert_equal ["retry", "running", 3, "upstream fixed", "user:ruby-test"],
                 [started.action, started.state, started.matched, started.reason, started.by]
    assert_equal({ "run" => run }, started.filter.context)
    assert_nil started.finished_at

    readings = []
    done = client.wait_operation(started.id, 30) { |op| readings << op }
    assert_equal "complete", done.state
    assert_predicate done, :finished?
    assert_equal [3, 3, 0], [done.acted, done.matched, done.skipped]
    assert_operator done.finished_at, :>=, done.created_at
    assert_equal done, readings.last
    assert_equal done, client.operation(started.id)

    reason = "retried: operation #{started.id}: upstream fixed"
    ids.each do |id|
      task = client.wait(id, 30)
      assert_equal "complete", task.state
      assert_equal({ "after" => { "attempt" => 1, "parents" => { "flaky" => { "attempts" => 4 } } } }, task.result)
      assert(client.history(id).any? { |t| t.reason == reason && t.by == "user:ruby-test" })
    end
    assert_equal 0, client.count_operation("retry", filter).matched
    error = assert_raises(Client::ConflictError) { client.cancel_operation(started.id) }
    assert_equal [409, "operation_finished"], [error.status, error.code]
  end

  def test_cancel_by_id_and_operations_listed_newest_first_a_page_at_a_time
    run = SecureRandom.uuid
    later = [1, 2].map do |value|
      client.create_task(NAMESPACE, "linear", { "value" => value, "run" => run }, delay: "1h")
    end
    filter = { ids: later.map(&:id), context: { "run" => run } }
    started = client.start_operation("cancel", filter, reason: "not needed")
    done = client.wait_operation(started.id, 30)
    assert_equal ["complete", 2, 2], [done.state, done.acted, done.matched]
    later.each { |task| assert_equal "cancelled", client.get_task(task.id).state }

    # Operations that match nothing start all the same.
    more = %w[none-1 none-2].map { |name| client.start_operation("cancel", { name: name }) }
    first = client.operations(limit: 2)
    assert_kind_of Client::OperationList, first
    assert_equal [more[1].id, more[0].id], first.operations.map(&:id)
    assert_equal more[0].id, first.next_before
    second = client.operations(limit: 2, before: first.next_before)
    assert_equal started.id, second.operations.first.id
  end

  def test_refusals_carry_the_apis_codes
    error = assert_raises(Client::NotFoundError) { client.operation(SecureRandom.uuid) }
    assert_equal "operation_not_found", error.code
    error = assert_raises(Client::NotFoundError) { client.cancel_operation(SecureRandom.uuid) }
    assert_equal "operation_not_found", error.code
    error = assert_raises(Client::InvalidRequestError) { client.count_operation("resolve", { namespace: NAMESPACE }) }
    assert_equal [400, "missing_result"], [error.status, error.code]
    error = assert_raises(Client::InvalidRequestError) { client.start_operation("retry", { state: "running" }) }
    assert_equal "invalid_filter", error.code
    error = assert_raises(Client::InvalidRequestError) { client.start_operation("delete") }
    assert_equal "invalid_action", error.code
  end
end

# The operations' calls against the stand-in of client_support.rb: the requests they send and the
# records they read back.
class OperationsWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  OP_ID = "019a0000-0000-7000-8000-0000000000c1"
  TASK_ID = "019a0000-0000-7000-8000-0000000000c2"
  FILTER = {
    "namespace" => "ruby_examples", "name" => "linear", "version" => nil, "state" => "error", "step" => nil,
    "error_kind" => "TimeoutError", "created_after" => "2026-11-27T10:00:00Z", "created_before" => nil,
    "context" => { "order_id" => 42 }, "ids" => nil, "queue" => nil, "reason" => nil, "dead_letters" => nil
  }.freeze
  OPERATION = {
    "id" => OP_ID, "action" => "resolve", "filter" => FILTER, "reason" => "by hand", "by" => "user:ops",
    "state" => "running", "matched" => 3, "acted" => 1, "skipped" => 0, "note" => nil,
    "created_at" => "2026-11-27T10:02:03.123456Z", "updated_at" => "2026-11-27T10:02:04Z", "finished_at" => nil
  }.freeze
  COMPLETE = OPERATION.merge("state" => "complete", "acted" => 2, "skipped" => 1,
                             "finished_at" => "2026-11-27T10:02:05Z").freeze

  def stand_in
    StandIn.new(
      "POST /v1/operations" => [[200, { "action" => "resolve", "filter" => FILTER, "matched" => 3,
                                        "sample" => [TASK_ID] }], [201, OPERATION]],
      # Then running again, for good: a wait whose time runs out.
      "GET /v1/operations/#{OP_ID}" => [[200, OPERATION], [200, OPERATION], [200, COMPLETE], [200, OPERATION]],
      "POST /v1/operations/#{OP_ID}/cancel" => [[200, OPERATION.merge("state" => "cancelled",
                                                                      "note" => "cancelled by user:ops")]],
      "GET /v1/operations" => [[200, { "operations" => [COMPLETE], "next_before" => OP_ID }]]
    )
  end

  def test_the_operation_calls_send_the_contracts_requests_and_read_its_answers
    api = stand_in
    client = Client.new(url: api.url)
    filter = { namespace: "ruby_examples", "name" => "linear", error_kind: "TimeoutError", version: nil,
               created_after: Time.new(2026, 11, 27, 11, 0, 0, "+01:00"), context: { "order_id" => 42 },
               ids: [TASK_ID] }
    count = client.count_operation("resolve", filter, result: { "value" => 1 })
    assert_equal [[TASK_ID], []], [count.sample, count.dead_letter_sample]
    assert_equal [Time.utc(2026, 11, 27, 10), "TimeoutError"], [count.filter.created_after, count.filter.error_kind]
    # The filter read back goes out again.
    op = client.start_operation("resolve", count.filter, result: { "value" => 1 }, reason: "by hand")
    assert_equal Time.utc(2026, 11, 27, 10, 2, 3, 123_456), op.created_at
    refute_predicate op, :finished?

    states = []
    done = client.wait_operation(op.id, 30) { |o| states << o.state }
    assert_equal %w[running running complete], states
    assert_equal [2, 1, nil, Time.utc(2026, 11, 27, 10, 2, 5)], [done.acted, done.skipped, done.note, done.finished_at]
    assert_equal "running", client.wait_operation(OP_ID, 0.3).state, "the time ran out"
    cancelled = client.cancel_operation(OP_ID)
    assert_equal ["cancelled", "cancelled by user:ops"], [cancelled.state, cancelled.note]
    page = client.operations(limit: 1, before: OP_ID)
    assert_equal [[done], OP_ID], [page.operations, page.next_before]

    posted = api.requests.select { |method, target, _| [method, target] == ["POST", "/v1/operations"] }.map(&:last)
    assert_equal [
      { "action" => "resolve", "result" => { "value" => 1 }, "dry_run" => true,
        "filter" => { "namespace" => "ruby_examples", "name" => "linear", "error_kind" => "TimeoutError",
                      "created_after" => "2026-11-27T10:00:00.000000Z", "context" => { "order_id" => 42 },
                      "ids" => [TASK_ID] } },
      { "action" => "resolve", "reason" => "by hand", "result" => { "value" => 1 }, "dry_run" => false,
        "filter" => FILTER.compact.merge("created_after" => "2026-11-27T10:00:00.000000Z") }
    ], posted
    assert_includes api.requests, ["GET", "/v1/operations?limit=1&before=#{OP_ID}", nil]
    assert_includes api.requests, ["POST", "/v1/operations/#{OP_ID}/cancel", nil]
  ensure
    client&.close
    api&.stop
  end
end
