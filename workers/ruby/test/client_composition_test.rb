# frozen_string_literal: true

require_relative "client_support"

# The composition calls' requests and answers against the stand-in of client_support.rb: child
# tasks and their links, a step's namespace, child and unserved flag, the parent filter and the
# workers listing.
class ClientCompositionWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  PARENT_ID = "019a0000-0000-7000-8000-000000000010"
  CHILD_ID = "019a0000-0000-7000-8000-000000000001"
  CHILD_STEP_ID = "019a0000-0000-7000-8000-000000000011"
  LINK = {
    "task_id" => CHILD_ID, "step_id" => CHILD_STEP_ID, "step_name" => "enrich", "attempt" => 1,
    "state" => "running", "namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0"
  }.freeze
  TASK = ClientWire::TASK.merge("state" => "running", "run_at" => nil)
  PARENT = TASK.merge("id" => PARENT_ID, "parent_task_id" => nil, "parent_step_id" => nil, "depth" => 0,
                      "children" => [LINK]).freeze
  CHILD = TASK.merge("namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0",
                     "parent_task_id" => PARENT_ID, "parent_step_id" => CHILD_STEP_ID, "depth" => 1,
                     "children" => nil).freeze
  CHILD_STEP = ClientWire::WAIT_STEP.merge(
    "id" => CHILD_STEP_ID, "name" => "enrich", "handler" => "tasker:child", "step_type" => "child", "wait" => nil,
    "namespace" => "ruby_examples", "unserved" => false,
    "child" => { "namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0", "task_id" => CHILD_ID,
                 "on_parent_cancel" => "abandon" }
  ).freeze
  ROUTED_STEP = ClientWire::WAIT_STEP.merge(
    "id" => "019a0000-0000-7000-8000-000000000012", "name" => "score", "handler" => "score",
    "step_type" => "standard", "state" => "enqueued", "wait" => nil, "namespace" => "python_examples",
    "child" => nil, "unserved" => true
  ).freeze
  WORKER = {
    "id" => "019a0000-0000-7000-8000-000000000020", "name" => "worker-1", "language" => "ruby", "version" => "0.1.0",
    "host" => "box", "pid" => 4242, "namespaces" => ["ruby_examples"], "handlers" => %w[double score],
    "concurrency" => 8, "started_at" => "2026-11-26T08:00:00Z", "last_seen_at" => "2026-11-26T09:00:00Z",
    "live" => true
  }.freeze

  def test_the_composition_calls_send_the_contracts_requests_and_read_its_answers
    gone = WORKER.merge("id" => "019a0000-0000-7000-8000-000000000021", "live" => false)
    api = StandIn.new(
      "GET /v1/tasks/#{PARENT_ID}" => [200, PARENT],
      "GET /v1/tasks" => [200, { "tasks" => [CHILD], "next_before" => nil }],
      "GET /v1/tasks/#{PARENT_ID}/steps" => [200, { "steps" => [CHILD_STEP, ROUTED_STEP], "next" => nil }],
      "GET /v1/workers" => [200, { "workers" => [WORKER, gone], "heartbeat_seconds" => 10 }]
    )
    client = Client.new(url: api.url)

    parent = client.get_task(PARENT_ID)
    assert_equal [nil, nil, 0], [parent.parent_task_id, parent.parent_step_id, parent.depth]
    assert_equal [Client::TaskChild.new(task_id: CHILD_ID, step_id: CHILD_STEP_ID, step_name: "enrich", attempt: 1,
                                        state: "running", namespace: "shop", name: "enrich_order",
                                        version: "1.2.0")], parent.children
    child = client.list_tasks(parent: PARENT_ID).tasks.first
    assert_equal [PARENT_ID, CHILD_STEP_ID, 1, nil], [child.parent_task_id, child.parent_step_id, child.depth,
                                                       child.children]
    assert_equal [CHILD_ID], client.each_task(parent: PARENT_ID, state: "running").map(&:id)
    # A task and a step from a server before composition.
    older = Client::Task.from_json(ClientWire::TASK)
    assert_equal [nil, 0, nil], [older.parent_task_id, older.depth, older.children]
    older_step = Client::Step.from_json(ClientWire::WAIT_STEP)
    assert_equal [nil, nil, false], [older_step.namespace, older_step.child, older_step.unserved]

    enrich, score = client.steps(PARENT_ID)
    assert_equal %w[child tasker:child ruby_examples], [enrich.step_type, enrich.handler, enrich.namespace]
    assert_equal Client::StepChild.new(namespace: "shop", name: "enrich_order", version: "1.2.0", task_id: CHILD_ID,
                                       on_parent_cancel: "abandon"), enrich.child
    refute_predicate enrich, :unserved?
    assert_equal ["python_examples", nil, true], [score.namespace, score.child, score.unserved]
    assert_predicate score, :unserved?
    assert_nil Client::StepChild.from_json(CHILD_STEP["child"].merge("task_id" => nil)).task_id

    live, stale = client.workers(all: true)
    assert_equal Client::WorkerInfo.new(
      id: WORKER["id"], name: "worker-1", language: "ruby", version: "0.1.0", host: "box", pid: 4242,
      namespaces: ["ruby_examples"], handlers: %w[double score], concurrency: 8,
      started_at: Time.utc(2026, 11, 26, 8), last_seen_at: Time.utc(2026, 11, 26, 9), live: true
    ), live
    assert_predicate live, :live?
    refute_predicate stale, :live?
    assert_equal [live, stale], client.workers

    assert_equal [
      ["GET", "/v1/tasks/#{PARENT_ID}", nil],
      ["GET", "/v1/tasks?parent=#{PARENT_ID}", nil],
      ["GET", "/v1/tasks?state=running&parent=#{PARENT_ID}", nil],
      ["GET", "/v1/tasks/#{PARENT_ID}/steps?limit=1000", nil],
      ["GET", "/v1/workers?all=true", nil],
      ["GET", "/v1/workers", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end
end

# The task list's filters against the same stand-in: times (a Time in UTC, a String as given)
# and the context as JSON text, in the query string of list_tasks and each_task.
class ClientListFiltersWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn
  TASK = ClientCompositionWireTest::TASK

  def test_the_filters_send_the_times_and_the_context_in_the_query
    api = StandIn.new("GET /v1/tasks" => [200, { "tasks" => [TASK], "next_before" => nil }])
    client = Client.new(url: api.url)

    page = client.list_tasks(created_after: Time.new(2026, 11, 26, 10, 0, 0, "+01:00"),
                             created_before: "2026-11-27T00:00:00Z",
                             context: { "order_id" => 42, "customer" => { "tier" => "gold" } })
    assert_equal [TASK["id"]], page.tasks.map(&:id)
    assert_equal [TASK["id"]], client.each_task(state: "running", context: { tags: ["rush"] }).map(&:id)

    context = URI.encode_www_form_component('{"order_id":42,"customer":{"tier":"gold"}}')
    assert_equal [
      ["GET", "/v1/tasks?created_after=2026-11-26T09%3A00%3A00.000000Z" \
              "&created_before=2026-11-27T00%3A00%3A00Z&context=#{context}", nil],
      ["GET", "/v1/tasks?state=running&context=#{URI.encode_www_form_component('{"tags":["rush"]}')}", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end
end
