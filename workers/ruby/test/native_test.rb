# frozen_string_literal: true

require "test_helper"
require "timeout"
require "open3"
require "io/wait" # IO#wait_readable
require "tmpdir"

# Through the real binding, against the real PostgreSQL/RabbitMQ configuration.
class NativeTest < Minitest::Test
  include TestSupport

  def start_native(templates, **options)
    Tasker::NativeWorker.start(Tasker::Worker.start_options(templates: templates, **options))
  end

  def test_bad_start_options_are_argument_errors
    error = assert_raises(ArgumentError) { start_native(FIXTURE_TEMPLATES, shutdown_timeout: -1) }
    assert_includes error.message, "shutdown_timeout must be a number of seconds"
    assert_raises(ArgumentError) { Tasker::NativeWorker.start('{"templates": "t", "nope": 1}') }
  end

  def test_the_gem_carries_no_bench_code
    refute Tasker.const_defined?(:BenchHost), "Tasker::BenchHost is built only by build.sh --bench"
  end

  def test_bad_templates_give_a_clear_error
    error = assert_raises(Tasker::WorkerError) do
      start_native("/nonexistent/templates", health_port: 0)
    end
    assert_includes error.message, "/nonexistent/templates"
    Dir.mktmpdir do |empty|
      error = assert_raises(Tasker::WorkerError) { start_native(empty, health_port: 0) }
      assert_includes error.message, "no templates found"
    end
  end

  def test_start_wait_with_the_gvl_released_and_stop
    native = start_native(FIXTURE_TEMPLATES, health_port: 0, concurrency: 3, shutdown_timeout: 2.5)
    assert_equal ["ruby_examples"], native.namespaces
    assert_equal 3, native.concurrency
    assert_in_delta 2.5, native.shutdown_timeout
    assert_match(/\A127\.0\.0\.1:\d+\z/, native.health_addr)

    # Another Ruby thread keeps running while take_steps blocks: the GVL is released.
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; Thread.pass } }
    started = monotonic
    assert_equal "[]", native.take_steps(3, 0.3)
    waited = monotonic - started
    ticker.kill.join
    assert_operator waited, :>=, 0.25
    assert_operator ticks, :>, 1000

    assert_raises(ArgumentError) { native.complete("not json") }
    native.stop
    assert native.stopped?
    native.stop # idempotent
    started = monotonic
    assert_equal "[]", native.take_steps(3, 10.0)
    assert_operator monotonic - started, :<, 1, "a stopped worker must not make callers wait"
  end

  def test_stop_wakes_a_dispatcher_blocked_in_take_steps
    native = start_native(FIXTURE_TEMPLATES, health_port: 0, concurrency: 1)
    waiter = Thread.new { native.take_steps(1, 30.0) }
    Thread.pass until waiter.status == "sleep" || !waiter.alive?
    started = monotonic
    native.stop
    assert_equal "[]", waiter.value
    assert_operator monotonic - started, :<, 10
  end

  def test_the_worker_reports_health_and_stops
    worker = Tasker::Worker.start(templates: FIXTURE_TEMPLATES, registry: Tasker::Registry.new,
                                  concurrency: 2, health_port: 0)
    assert_equal 2, worker.concurrency
    require "net/http"
    health = JSON.parse(Net::HTTP.get(URI("http://#{worker.health_addr}/health")))
    assert_equal "ruby", health["language"], health.inspect
    runner = Thread.new { worker.run }
    worker.stop
    assert_same worker, runner.value
  end

  # The core's records reach Tasker.logger, each at its level, named for its Rust module.
  def test_the_core_logs_through_tasker_logger
    lines = Queue.new
    sink = Object.new
    sink.define_singleton_method(:write) { |line| lines << line }
    sink.define_singleton_method(:close) { nil }
    previous = Tasker.logger
    Tasker.logger = Logger.new(sink)
    worker = Tasker::Worker.new(templates: FIXTURE_TEMPLATES, registry: Tasker::Registry.new, health_port: 0).start
    begin
      deadline = monotonic + 20
      line = nil
      until line&.include?("worker consuming")
        left = deadline - monotonic
        flunk "no 'worker consuming' record reached Tasker.logger within 20 s" if left <= 0
        line = Timeout.timeout(left) { lines.pop }
      end
      assert_match(/INFO -- : tasker_worker::worker: worker consuming namespaces=/, line)
    ensure
      worker.stop
      Tasker.logger = previous
    end
  end

  def test_the_entry_point_rejects_a_missing_templates_folder
    bin = File.expand_path("../bin/tasker-worker-ruby", __dir__)
    _out, err, status = Open3.capture3(RbConfig.ruby, bin, "--templates", "/nonexistent")
    assert_equal 2, status.exitstatus
    assert_includes err, "--templates /nonexistent: no such directory"
    _out, err, status = Open3.capture3(RbConfig.ruby, bin)
    assert_equal 2, status.exitstatus
    assert_includes err, "--templates DIR is required"
  end

  def test_the_conformance_worker_prints_its_ready_line_and_stops_cleanly_on_sigterm
    script = File.expand_path("../conformance-worker", __dir__)
    Open3.popen3(script, "--templates", FIXTURE_TEMPLATES, "--health-port", "0", "--concurrency", "2") do |stdin, stdout, stderr, wait|
      stdin.close
      errors = Thread.new { stderr.read }
      ready = stdout.wait_readable(60) && stdout.gets
      assert_match(/\Atasker worker ready: language=ruby health=127\.0\.0\.1:\d+ namespaces=ruby_examples\n\z/, ready.to_s,
                   "stderr: #{errors.value unless wait.alive?}")
      Process.kill("TERM", wait.pid)
      status = wait.join(30)&.value
      refute_nil status, "the worker did not stop within 30 s of SIGTERM"
      assert status.success?, "exit status #{status.inspect}; stderr: #{errors.value}"
      # A graceful stop ends with its own line and logs no error on the way.
      assert_match(/INFO -- tasker: stopped\z/, errors.value.rstrip)
      refute_match(/ERROR/, errors.value)
    end
  end
end

