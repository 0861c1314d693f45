# frozen_string_literal: true

require_relative "client_support"
require "stringio"
require "tmpdir"

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

  def test_a_failed_step_is_replayed_by_the_local_handler_on_its_recorded_inputs
    require "tasker/testing"
    failed = run_task("permanent_failure", { "value" => 4 })
    assert_equal "error", failed.state
    inputs = client.step_inputs(failed.id, "doomed")
    assert_equal [1, 1, "failed", { "value" => 4 }], [inputs["attempt"], inputs["latest_attempt"], inputs["state"], inputs["context"]]
    replayed = Tasker::Testing.replay(failed.id, "doomed", client: client)
    assert_equal "validation", replayed.outcome.kind
    assert replayed.reproduced?, replayed.inspect
    error = assert_raises(Client::InvalidRequestError) { client.step_inputs(failed.id, "doomed", attempt: 2) }
    assert_equal "invalid_query", error.code
    assert_raises(Client::NotFoundError) { client.step_inputs(failed.id, "nope") }
    # What `tasker replay … -- ruby -rtasker/testing -e 'exit Tasker::Testing.main'` runs.
    Dir.mktmpdir do |dir|
      file = File.join(dir, "inputs.json")
      File.write(file, JSON.generate(inputs))
      out = StringIO.new
      assert_equal 0, Tasker::Testing.main(["--", file], out: out)
      assert_match(/doomed \(attempt 1\): failed with validation: input rejected for good/, out.string)
      assert_match(/reproduced/, out.string)
    end
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
      error = assert_raises(Client::InvalidRequestError, options.inspect) do
        create("linear", { "value" => 6 }, **options)
      end
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
