# frozen_string_literal: true

require "test_helper"
require "support/cluster"
require "support/tls"
require "net/http"
require "open3"
require "rbconfig"
require_relative "../fixtures/handlers"

# Tasker::Client against a real orchestrator, with a Ruby worker running the ruby_examples
# fixture templates (tests/fixtures/task_templates/ruby) in this process.
class ClientTest < Minitest::Test
  include TestSupport
  extend TestSupport::Cluster::Shared

  Client = Tasker::Client
  NAMESPACE = "ruby_examples"
  PACKAGE = File.expand_path("..", __dir__)

  def self.start_cluster
    TestSupport::Cluster.new(templates: FIXTURE_TEMPLATES, registry: Tasker.registry)
  end

  def cluster
    self.class.cluster
  end

  def client
    @client ||= cluster.client
  end

  def create(name, context = {}, **options)
    client.create_task(NAMESPACE, name, context, **options)
  end

  # A task of +name+, once terminal.
  def run_task(name, context = {})
    client.wait(create(name, context).id, 30)
  end

  def test_a_task_is_created_waited_for_and_completes_with_its_result
    task = create("linear", { "value" => 6 })
    assert_kind_of Client::Task, task
    assert_equal [NAMESPACE, "linear", "1.0.0"], [task.namespace, task.name, task.version]
    assert_equal({ "value" => 6 }, task.context)
    assert_kind_of Time, task.created_at

    done = client.wait(task.id, 30)
    assert_equal "complete", done.state
    assert_predicate done, :terminal?
    assert_equal({ "halve" => { "value" => 242 } }, done.result)
    assert_equal 0, done.open_steps
    assert_operator done.completed_at, :>=, done.created_at
    assert_equal done, client.get_task(task.id)
  end

  def test_a_repeated_idempotency_key_gives_the_same_task_and_refuses_another_context
    key = "order-#{SecureRandom.hex(4)}"
    first = create("linear", { "value" => 1 }, idempotency_key: key)
    again = create("linear", { "value" => 1 }, idempotency_key: key)
    assert_equal first.id, again.id
    assert_equal key, again.idempotency_key

    error = assert_raises(Client::ConflictError) { create("linear", { "value" => 2 }, idempotency_key: key) }
    assert_equal "idempotency_key_reused", error.code
    assert_equal 409, error.status
    assert_kind_of Client::ApiError, error
    assert_includes error.message, first.id
    assert_equal "complete", client.wait(first.id, 30).state
  end

  def test_wait_polls_past_a_server_cap_lower_than_its_timeout
    capped = Client.new(url: cluster.orchestrator("TASKER_ORCHESTRATOR__MAX_WAIT_SECONDS" => "1").url)
    task = create("slow_chain", { "sleep_ms" => 2_500 })
    # The cap is real: that orchestrator refuses a single long poll beyond it.
    refused = Net::HTTP.get_response(URI("#{capped.url}/v1/tasks/#{task.id}?wait=2"))
    assert_equal ["400", "invalid_wait"], [refused.code, JSON.parse(refused.body)["error"]["code"]]

    started = monotonic
    running = capped.wait(task.id, 1.2)
    assert_equal "running", running.state, "the wait must return the task as it is when its time runs out"
    assert_operator monotonic - started, :>=, 1.2

    done = capped.wait(task.id, 30)
    assert_equal "complete", done.state
    assert_equal({ "quick" => { "attempt" => 1, "parents" => { "slow" => { "slept_ms" => 2_500 } } } }, done.result)
  end

  def test_list_tasks_pages_through_every_task_once
    ids = Array.new(5) { create("diamond", { "value" => 3 }).id }
    filter = { namespace: NAMESPACE, name: "diamond" }
    pages = []
    before = nil
    loop do
      page = client.list_tasks(**filter, limit: 2, before: before)
      assert_kind_of Client::TaskPage, page
      pages << page.tasks.map(&:id)
      break unless (before = page.next_before)
    end
    assert_equal [2, 2, 1], pages.map(&:size)
    assert_equal ids.sort.reverse, pages.flatten, "newest first, each once"

    tasks = client.each_task(**filter, page_size: 2)
    assert_kind_of Enumerator, tasks
    assert_equal pages.flatten, tasks.map(&:id)
    seen = []
    client.each_task(**filter, page_size: 3) { |t| seen << t.id }
    assert_equal pages.flatten, seen

    ids.each { |id| client.wait(id, 30) }
    assert_equal ids.sort, client.each_task(**filter, state: "complete").map(&:id).sort
    error = assert_raises(Client::InvalidRequestError) { client.list_tasks(state: "finished") }
    assert_equal ["invalid_state", 400], [error.code, error.status]
  end

  def test_cancel_stops_a_running_task_and_refuses_a_finished_one
    slow = create("slow_chain", { "sleep_ms" => 3_000 })
    cancelled = client.cancel(slow.id)
    assert_equal "cancelled", cancelled.state
    error = assert_raises(Client::ConflictError) { client.cancel(slow.id) }
    assert_equal ["task_not_running", 409], [error.code, error.status]

    done = run_task("linear", { "value" => 2 })
    error = assert_raises(Client::ConflictError) { client.cancel(done.id) }
    assert_equal "task_not_running", error.code
  end

  def test_steps_are_read_page_by_page
    task = run_task("linear", { "value" => 6 })
    steps = client.steps(task.id)
    assert_equal({ "double" => 12, "add_ten" => 22, "square" => 484, "halve" => 242 },
                 steps.to_h { |s| [s.name, s.result["value"]] })
    steps.each do |step|
      assert_kind_of Client::Step, step
      assert_equal ["completed", 1, "standard"], [step.state, step.attempt, step.step_type]
      %i[created_at dispatched_at started_at finished_at processed_at].each do |time|
        assert_kind_of Time, step[time], "#{step.name}.#{time}"
      end
    end
    assert_equal steps, client.steps(task.id, page_size: 1)

    first = client.steps_page(task.id, limit: 3)
    assert_kind_of Client::StepPage, first
    assert_equal steps.first(3), first.steps
    assert_equal steps[2].id, first.next
    last = client.steps_page(task.id, after: first.next, limit: 3)
    assert_equal [steps.last], last.steps
    assert_nil last.next
  end

  def test_history_lists_the_transitions_oldest_first
    task = run_task("linear", { "value" => 6 })
    history = client.history(task.id)
    assert(history.all?(Client::Transition))
    assert(history.each_cons(2).all? { |a, b| a.at <= b.at }, "oldest first")
    task_moves = history.reject(&:step).map { |t| [t.from, t.to] }
    assert_equal ["running", "complete"], task_moves.last
    assert_equal %w[add_ten double halve square], history.filter_map(&:step).uniq.sort
    assert(history.select(&:step).group_by(&:step).values.all? { |moves| moves.last.to == "completed" })
  end

  def test_retry_and_resolve_repair_a_failed_task_and_are_recorded
    failed = run_task("permanent_failure")
    assert_equal "error", failed.state

    assert_equal failed.id, client.retry(failed.id, by: "user:ruby-test", reason: "upstream fixed").id
    assert_equal "error", client.wait(failed.id, 30).state, "the handler fails for good again"
    doomed = client.steps(failed.id).find { |s| s.name == "doomed" }
    assert_equal ["failed", 2], [doomed.state, doomed.attempt], "the retry must run the step again"
    error = assert_raises(Client::ConflictError) { client.retry(failed.id, step: "never") }
    assert_equal "step_not_failed", error.code

    resolved = client.resolve(failed.id, "doomed", { "value" => 5 }, by: "user:ruby-test", reason: "done by hand")
    assert_equal failed.id, resolved.id
    done = client.wait(failed.id, 30)
    assert_equal "complete", done.state
    assert_equal({ "never" => { "value" => 10 } }, done.result)
    repairs = client.history(failed.id).select { |t| t.step.nil? && t.by }.map { |t| [t.from, t.to, t.by, t.reason] }
    assert_equal [["error", "running", "user:ruby-test", "retried: upstream fixed"],
                  ["error", "running", "user:ruby-test", "resolved: done by hand"]], repairs

    error = assert_raises(Client::ConflictError) { client.retry(done.id) }
    assert_equal "task_not_failed", error.code
    error = assert_raises(Client::NotFoundError) { client.resolve(done.id, "process#0", { "value" => 1 }) }
    assert_equal "step_not_found", error.code
  end

  def test_a_delayed_task_is_scheduled_until_its_time
    later = create("linear", { "value" => 6 }, delay: "1h")
    assert_equal "scheduled", later.state
    refute_predicate later, :terminal?
    assert_kind_of Time, later.run_at
    assert_in_delta 3600, later.run_at - later.created_at, 60
    assert_includes client.list_tasks(state: "scheduled", name: "linear").tasks.map(&:id), later.id
    in_seconds = create("linear", { "value" => 6 }, delay: 600) # sent as "600s"
    assert_in_delta 600, in_seconds.run_at - in_seconds.created_at, 5
    [later, in_seconds].each { |t| assert_equal "cancelled", client.cancel(t.id).state, "a scheduled task cancels" }

    run_at = Time.now + 2
    soon = create("linear", { "value" => 6 }, run_at: run_at)
    assert_equal "scheduled", soon.state
    assert_in_delta run_at.to_f, soon.run_at.to_f, 0.01
    done = client.wait(soon.id, 30)
    assert_equal ["complete", { "halve" => { "value" => 242 } }], [done.state, done.result]
    assert(client.steps(soon.id).all? { |s| s.started_at >= soon.run_at }, "no step starts before run_at")
    task_moves = client.history(soon.id).reject(&:step).map { |t| [t.from, t.to] }
    assert_includes task_moves, %w[scheduled running]

    refusals = [[{ delay: "soon" }, "invalid_delay"], [{ delay: "400d" }, "invalid_delay"],
                [{ run_at: "tomorrow" }, "invalid_run_at"], [{ run_at: Time.now + (400 * 86_400) }, "invalid_run_at"],
                [{ run_at: run_at, delay: "10m" }, "invalid_run_at"]]
    refusals.each do |options, code|
      error = assert_raises(Client::InvalidRequestError, options.inspect) { create("linear", { "value" => 6 }, **options) }
      assert_equal [400, code], [error.status, error.code]
    end
  end

  def test_a_signal_completes_the_step_waiting_for_it_once
    payload = { "approved_by" => "ruby-test" }
    task = create("signal_wait", { "value" => 5 })
    error = assert_raises(Client::InvalidRequestError) { client.signal(task.id, "not a name!") }
    assert_equal "invalid_signal_name", error.code
    error = assert_raises(Client::NotFoundError) { client.signal(SecureRandom.uuid, "approved") }
    assert_equal "task_not_found", error.code

    sent = client.signal(task.id, "approved", payload, signal_id: "approval-1")
    assert_kind_of Client::Signal, sent
    assert_equal [task.id, "approved", "approval-1", payload], [sent.task_id, sent.name, sent.signal_id, sent.payload]
    assert_kind_of Time, sent.received_at
    # The same id and payload again changes nothing; another payload is a conflict.
    again = client.signal(task.id, "approved", payload, signal_id: "approval-1")
    assert_equal [sent.signal_id, sent.received_at], [again.signal_id, again.received_at]
    error = assert_raises(Client::ConflictError) do
      client.signal(task.id, "approved", { "approved_by" => "someone else" }, signal_id: "approval-1")
    end
    assert_equal [409, "signal_conflict"], [error.status, error.code]

    done = client.wait(task.id, 30)
    assert_equal "complete", done.state
    assert_equal({ "finish" => { "value" => 10, "approved_by" => "ruby-test" } }, done.result)
    approval, finish = client.steps(task.id)
    assert_equal %w[approval wait completed], [approval.name, approval.step_type, approval.state]
    assert_kind_of Client::StepWait, approval.wait
    assert_equal %w[signal approved fail], [approval.wait.kind, approval.wait.signal, approval.wait.on_timeout]
    assert_equal payload, approval.result
    assert_nil finish.wait
    assert_equal "signal_wait_finish", finish.handler

    received = client.signals(task.id)
    assert_equal [["approval-1", "approval"]], received.map { |s| [s.signal_id, s.consumed_by] }
    assert_operator received.first.consumed_at, :>=, received.first.received_at
    error = assert_raises(Client::ConflictError) { client.signal(task.id, "approved", payload) }
    assert_equal "task_finished", error.code
  end

  def test_a_schedule_is_applied_paused_resumed_triggered_backfilled_and_deleted
    name = "nightly-#{SecureRandom.hex(4)}"
    definition = { "namespace" => NAMESPACE, "name" => name, "template" => "linear", "cron" => "30 2 * * *",
                   "timezone" => "Europe/Berlin", "context" => { "value" => 6 } }
    created = client.apply_schedule(definition)
    assert_kind_of Client::Schedule, created
    assert_equal [NAMESPACE, name, "linear", nil, "30 2 * * *", "Europe/Berlin", { "value" => 6 }],
                 [created.namespace, created.name, created.template, created.version, created.cron, created.timezone,
                  created.context]
    assert_equal ["skip", "1h", false, nil, 0, 0, nil],
                 [created.overlap, created.catch_up, created.paused, created.note, created.fires, created.skipped,
                  created.last_task_id]
    assert_operator created.next_fire_at, :>, created.created_at

    shown = client.get_schedule(NAMESPACE, name)
    assert_equal 5, shown.upcoming.size
    assert_equal shown.next_fire_at, shown.upcoming.first
    assert_equal shown.upcoming.sort, shown.upcoming
    listed = client.list_schedules(namespace: NAMESPACE)
    assert_includes listed.map(&:name), name
    assert(listed.all? { |s| s.namespace == NAMESPACE })
    assert_includes client.list_schedules.map(&:name), name

    paused = client.pause_schedule(NAMESPACE, name, note: "maintenance")
    assert_predicate paused, :paused?
    assert_equal "maintenance", paused.note
    applied = client.apply_schedule(definition.merge("cron" => "0 3 * * *"))
    assert_equal "0 3 * * *", applied.cron
    assert_predicate applied, :paused?, "a pause survives an update"
    patched = client.update_schedule(NAMESPACE, name, { overlap: "allow" })
    assert_equal ["allow", "0 3 * * *"], [patched.overlap, patched.cron]
    resumed = client.resume_schedule(NAMESPACE, name)
    refute_predicate resumed, :paused?
    refute_nil resumed.next_fire_at

    task = client.trigger_schedule(NAMESPACE, name)
    assert_kind_of Client::Task, task
    assert_equal [NAMESPACE, "linear", { "value" => 6 }], [task.namespace, task.name, task.context]
    assert_equal "complete", client.wait(task.id, 30).state

    # 03:00 in Berlin on each of three winter days.
    from = Time.utc(2024, 1, 1)
    to = "2024-01-03T12:00:00Z"
    backfill = client.backfill_schedule(NAMESPACE, name, from, to)
    assert_kind_of Client::Backfill, backfill
    assert_equal [3, 0, 3], [backfill.created, backfill.existing, backfill.task_ids.uniq.size]
    again = client.backfill_schedule(NAMESPACE, name, from, to)
    assert_equal [0, 3], [again.created, again.existing], "a backfill is safe to repeat"
    assert_equal backfill.task_ids.sort, again.task_ids.sort
    backfill.task_ids.each { |id| assert_equal "complete", client.wait(id, 30).state }

    error = assert_raises(Client::InvalidRequestError) do
      client.update_schedule(NAMESPACE, name, { "cron" => "every night" })
    end
    assert_equal "invalid_cron", error.code
    error = assert_raises(Client::NotFoundError) do
      client.apply_schedule(definition.merge("template" => "no_such_template"))
    end
    assert_equal "unknown_template", error.code

    assert_nil client.delete_schedule(NAMESPACE, name)
    %i[get_schedule delete_schedule trigger_schedule].each do |call|
      error = assert_raises(Client::NotFoundError) { client.public_send(call, NAMESPACE, name) }
      assert_equal [404, "schedule_not_found"], [error.status, error.code]
    end
  end

  def test_an_unknown_task_is_not_found
    id = SecureRandom.uuid
    [-> { client.get_task(id) }, -> { client.wait(id, 5) }, -> { client.cancel(id) },
     -> { client.steps(id) }, -> { client.history(id) }].each do |call|
      error = assert_raises(Client::NotFoundError, &call)
      assert_equal ["task_not_found", 404], [error.code, error.status]
      assert_includes error.message, id
    end
    error = assert_raises(Client::InvalidRequestError) { client.get_task("no-such-id") }
    assert_equal "invalid_id", error.code
  end

  def test_an_unreachable_orchestrator_is_a_connection_error
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    url = "http://127.0.0.1:#{port}"
    error = assert_raises(Client::ConnectionError) { Client.new(url: url).get_task(SecureRandom.uuid) }
    assert_kind_of Errno::ECONNREFUSED, error.cause
    assert_includes error.message, url
  end

  def test_an_orchestrator_that_does_not_answer_in_time_is_a_connection_error
    # A listening socket no one accepts from: the connection opens, no answer ever comes.
    TCPServer.open("127.0.0.1", 0) do |silent|
      client = Client.new(url: "http://127.0.0.1:#{silent.addr[1]}", timeout: 0.3)
      started = monotonic
      error = assert_raises(Client::ConnectionError) { client.get_task(SecureRandom.uuid) }
      assert_kind_of Net::ReadTimeout, error.cause
      assert_operator monotonic - started, :<, 5
    end
  end

  def test_the_url_and_ca_file_come_from_the_environment_unless_given
    with_env("TASKER_URL" => nil, "TASKER_TOKEN" => nil, "TASKER_TLS_CA_FILE" => nil) do
      assert_equal Client::DEFAULT_URL, Client.new.url
    end
    with_env("TASKER_URL" => "http://tasker.invalid:9000") do
      assert_equal "http://tasker.invalid:9000", Client.new.url
      assert_equal "http://127.0.0.1:9001", Client.new(url: "http://127.0.0.1:9001").url
    end
    with_env("TASKER_TLS_CA_FILE" => "/nonexistent/ca.pem") do
      error = assert_raises(Client::Error) { Client.new }
      assert_includes error.message, "/nonexistent/ca.pem"
    end
    error = assert_raises(Client::Error) { Client.new(tls_ca_file: File.join(PACKAGE, "README.md")) }
    assert_match(/\ATLS: .*README.md/, error.message)
    error = assert_raises(Client::Error) { Client.new(url: "ftp://127.0.0.1") }
    assert_includes error.message, "ftp://127.0.0.1"
  end

  def test_the_example_app_submits_and_waits
    example = File.join(PACKAGE, "examples/submit_and_wait.rb")
    out, err, status = ruby({ "TASKER_URL" => cluster.url }, example)
    assert status.success?, "#{example} failed: #{err}"
    assert_match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12} complete \{"halve":\{"value":242\}\}\n\z/, out)

    # The README shows it as it is.
    code = File.read(example).sub(/\A# frozen_string_literal: true\n\n/, "")
    assert_includes File.read(File.join(PACKAGE, "README.md")), "```ruby\n#{code}```"
  end

  def test_the_client_loads_without_the_native_extension
    out, err, status = ruby({}, "-e", <<~'RUBY')
      require "tasker/client"
      native = $LOADED_FEATURES.grep(/tasker_rb/)
      abort "loaded #{native}" unless native.empty? && !defined?(Tasker::NativeWorker)
      print Tasker::Client::DEFAULT_URL
    RUBY
    assert status.success?, err
    assert_equal "http://127.0.0.1:8080", out
  end

  # Runs a Ruby process with this package's lib/ on its load path.
  def ruby(env, *args)
    Open3.capture3(env, RbConfig.ruby, "-I", File.join(PACKAGE, "lib"), *args)
  end
end

# The time calls' requests and answers against a stand-in for the API (no orchestrator): the
# paths, methods and bodies of the contract, and the records read from its answers.
class ClientTimeWireTest < Minitest::Test
  Client = Tasker::Client

  TASK_ID = "019a0000-0000-7000-8000-000000000001"
  CREATED = { "created_at" => "2026-11-26T09:00:00.123456Z" }.freeze
  TASK = {
    "id" => TASK_ID, "namespace" => "ruby_examples", "name" => "linear", "version" => "1.0.0", "state" => "scheduled",
    "context" => { "value" => 6 }, "idempotency_key" => nil, "open_steps" => 4, "result" => nil, "error" => nil,
    "completed_at" => nil, "duration_ms" => nil, "run_at" => "2026-11-27T02:30:00Z", "some_later_field" => 1, **CREATED
  }.freeze
  WAIT_STEP = {
    "id" => "019a0000-0000-7000-8000-000000000002", "name" => "approval", "handler" => "tasker:wait",
    "step_type" => "wait", "state" => "waiting", "attempt" => 1, "max_attempts" => 1, **CREATED,
    "wait" => { "kind" => "signal", "signal" => "approved", "until" => "2026-12-03T09:00:00Z", "on_timeout" => "fail" }
  }.freeze
  SIGNAL = {
    "task_id" => TASK_ID, "name" => "approved", "signal_id" => "approval-1", "payload" => { "approved_by" => "ops" },
    "received_at" => "2026-11-26T09:00:01Z", "consumed_by" => nil, "consumed_at" => nil
  }.freeze
  SCHEDULE = {
    "namespace" => "ruby_examples", "name" => "nightly report", "template" => "linear", "version" => nil,
    "cron" => "30 2 * * *", "timezone" => "Europe/Berlin", "context" => { "value" => 6 }, "overlap" => "skip",
    "catch_up" => "1h", "paused" => false, "note" => nil, "next_fire_at" => "2026-11-27T01:30:00Z",
    "last_fire_at" => nil, "last_task_id" => nil, "fires" => 0, "skipped" => 0,
    "updated_at" => "2026-11-26T09:00:00Z", **CREATED
  }.freeze

  # An HTTP/1.1 server on a free port answering each "METHOD /path" of +answers+ with
  # [status, JSON or nil], or a list of them in turn (the last one again once the others are
  # used); #requests holds [method, path with query, parsed body or nil].
  class StandIn
    attr_reader :requests, :url

    def initialize(answers)
      @answers = answers
      @requests = []
      @server = TCPServer.new("127.0.0.1", 0)
      @url = "http://127.0.0.1:#{@server.addr[1]}"
      @thread = Thread.new { loop { serve(@server.accept) } }
    end

    def stop
      @thread.kill
      @server.close
    end

    private

    def serve(socket)
      Thread.new do
        while (line = socket.gets)
          method, target = line.split
          headers = {}
          while (header = socket.gets) && header != "\r\n"
            key, value = header.split(":", 2)
            headers[key.downcase] = value.strip
          end
          length = headers.fetch("content-length", "0").to_i
          body = length.zero? ? nil : JSON.parse(socket.read(length))
          @requests << [method, target, body]
          found = @answers.fetch("#{method} #{target.split("?").first}") do
            [404, { "error" => { "code" => "no_route", "message" => target } }]
          end
          found = found.size > 1 ? found.shift : found.first if found.first.is_a?(Array)
          status, answer = found
          data = answer.nil? ? "" : JSON.generate(answer)
          socket.write("HTTP/1.1 #{status} X\r\ncontent-type: application/json\r\n" \
                       "content-length: #{data.bytesize}\r\n\r\n#{data}")
        end
      ensure
        socket.close
      end
    end
  end

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

# The composition calls' requests and answers against the same stand-in: child tasks and their
# links, a step's namespace, child and unserved flag, the parent filter and the workers listing.
class ClientCompositionWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientTimeWireTest::StandIn

  PARENT_ID = "019a0000-0000-7000-8000-000000000010"
  CHILD_ID = "019a0000-0000-7000-8000-000000000001"
  CHILD_STEP_ID = "019a0000-0000-7000-8000-000000000011"
  LINK = {
    "task_id" => CHILD_ID, "step_id" => CHILD_STEP_ID, "step_name" => "enrich", "attempt" => 1,
    "state" => "running", "namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0"
  }.freeze
  TASK = ClientTimeWireTest::TASK.merge("state" => "running", "run_at" => nil)
  PARENT = TASK.merge("id" => PARENT_ID, "parent_task_id" => nil, "parent_step_id" => nil, "depth" => 0,
                      "children" => [LINK]).freeze
  CHILD = TASK.merge("namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0",
                     "parent_task_id" => PARENT_ID, "parent_step_id" => CHILD_STEP_ID, "depth" => 1,
                     "children" => nil).freeze
  CHILD_STEP = ClientTimeWireTest::WAIT_STEP.merge(
    "id" => CHILD_STEP_ID, "name" => "enrich", "handler" => "tasker:child", "step_type" => "child", "wait" => nil,
    "namespace" => "ruby_examples", "unserved" => false,
    "child" => { "namespace" => "shop", "name" => "enrich_order", "version" => "1.2.0", "task_id" => CHILD_ID,
                 "on_parent_cancel" => "abandon" }
  ).freeze
  ROUTED_STEP = ClientTimeWireTest::WAIT_STEP.merge(
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
    older = Client::Task.from_json(ClientTimeWireTest::TASK)
    assert_equal [nil, 0, nil], [older.parent_task_id, older.depth, older.children]
    older_step = Client::Step.from_json(ClientTimeWireTest::WAIT_STEP)
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
  StandIn = ClientTimeWireTest::StandIn
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

# The fair-sharing calls' requests and answers against the same stand-in: a task's priority, a
# throttled step's throttle and limits, the concurrency and rate limits, and pausing and resuming
# a rate key.
class ClientFlowWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientTimeWireTest::StandIn

  TASK = ClientTimeWireTest::TASK
  TASK_PATH = "/v1/tasks/#{ClientTimeWireTest::TASK_ID}".freeze
  THROTTLED_STEP = ClientTimeWireTest::WAIT_STEP.merge(
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
    older = Client::Step.from_json(ClientTimeWireTest::WAIT_STEP)
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

# Bulk create, purge and a purged task against the same stand-in, and the conformance client's
# `scale` mode.
class ClientScaleWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientTimeWireTest::StandIn

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

# The client over https:// to an orchestrator that requires API tokens (no worker: the tasks
# stay running).
class ClientTlsTest < Minitest::Test
  include TestSupport
  extend TestSupport::Cluster::Shared

  Client = Tasker::Client

  def self.start_cluster
    @tls_dir = Dir.mktmpdir("tasker-ruby-tls")
    Minitest.after_run { FileUtils.rm_rf(@tls_dir) }
    @tls = TestSupport::Tls.write(@tls_dir)
    TestSupport::Cluster.new(
      templates: FIXTURE_TEMPLATES, token_scope: "write",
      env: { "TASKER_ORCHESTRATOR__AUTH" => "tokens", "TASKER_ORCHESTRATOR__TLS_CERT_FILE" => @tls[:cert],
             "TASKER_ORCHESTRATOR__TLS_KEY_FILE" => @tls[:key] }
    )
  end

  class << self
    attr_reader :tls
  end

  def cluster
    self.class.cluster
  end

  # The CA that signed the orchestrator's certificate (written when the cluster started).
  def ca_file
    cluster
    self.class.tls[:ca]
  end

  def test_https_with_the_ca_file_and_a_token
    client = cluster.client(tls_ca_file: ca_file)
    assert_match %r{\Ahttps://}, client.url
    task = client.create_task("ruby_examples", "linear", { "value" => 6 })
    assert_equal task.id, client.get_task(task.id).id
    assert_equal "cancelled", client.cancel(task.id).state
    assert_raises(Client::NotFoundError) { client.get_task(SecureRandom.uuid) }
  end

  def test_the_url_token_and_ca_file_are_read_from_the_environment
    with_env("TASKER_URL" => cluster.url, "TASKER_TOKEN" => cluster.token, "TASKER_TLS_CA_FILE" => ca_file) do
      assert_equal [], Tasker::Client.new.list_tasks(state: "error").tasks
    end
  end

  def test_a_missing_token_or_scope_is_an_auth_error
    error = assert_raises(Client::AuthError) { Client.new(url: cluster.url, tls_ca_file: ca_file).list_tasks }
    assert_equal ["unauthenticated", 401], [error.code, error.status]

    reader = Client.new(url: cluster.url, token: cluster.create_token("reader", "read"), tls_ca_file: ca_file)
    assert_kind_of Client::TaskPage, reader.list_tasks
    error = assert_raises(Client::AuthError) { reader.create_task("ruby_examples", "linear", { "value" => 1 }) }
    assert_equal ["forbidden", 403], [error.code, error.status]
    assert_equal "read", error.details["scope"]
  end

  def test_without_the_ca_the_certificate_is_refused
    client = Client.new(url: cluster.url, token: cluster.token)
    error = assert_raises(Client::ConnectionError) { client.list_tasks }
    assert_kind_of OpenSSL::SSL::SSLError, error.cause
    assert_match(/certificate verify failed/, error.message)
  end
end
