# frozen_string_literal: true

require "test_helper"
require "net/http"
require "socket"
require "tmpdir"
require "fileutils"

# Ruby handlers behind the real binding, a real orchestrator (target/debug/tasker-orchestrator),
# PostgreSQL and RabbitMQ. One orchestrator, one database (created for this run) and one
# in-process Tasker::Worker serve every test here; the queue prefix is this run's own.
class EndToEndTest < Minitest::Test
  include TestSupport

  class RejectedInput < Tasker::PermanentError; end

  TEMPLATES = {
    "fan_out" => <<~YAML,
      namespace: ruby_e2e
      name: fan_out
      version: 1.0.0
      steps:
        - { name: start, handler: e2e_value }
        - { name: a, handler: e2e_nap, depends_on: [start] }
        - { name: b, handler: e2e_nap, depends_on: [start] }
        - { name: c, handler: e2e_nap, depends_on: [start] }
        - { name: d, handler: e2e_nap, depends_on: [start] }
        - { name: join, handler: e2e_sum, depends_on: [a, b, c, d] }
    YAML
    "reject" => <<~YAML,
      namespace: ruby_e2e
      name: reject
      version: 1.0.0
      steps:
        - name: check
          handler: e2e_reject
          retry: { max_attempts: 3, backoff: none }
    YAML
    "retry" => <<~YAML,
      namespace: ruby_e2e
      name: retry
      version: 1.0.0
      steps:
        - name: shaky
          handler: e2e_shaky
          retry: { max_attempts: 3, backoff: exponential, base_ms: 10, max_ms: 50 }
    YAML
    "unknown" => <<~YAML,
      namespace: ruby_e2e
      name: unknown
      version: 1.0.0
      steps:
        - { name: lost, handler: nobody_home }
    YAML
    "slow" => <<~YAML,
      namespace: ruby_e2e
      name: slow
      version: 1.0.0
      steps:
        - { name: slow, handler: e2e_nap, timeout_seconds: 30 }
    YAML
  }.freeze

  def self.registry
    registry = Tasker::Registry.new
    registry.register("e2e_value") { |c| { "value" => c.context.fetch("value") } }
    registry.register("e2e_nap") do |c|
      sleep(c.context.fetch("nap_ms", 300) / 1000.0)
      { "value" => c.parent_results.fetch("start", { "value" => 0 })["value"] }
    end
    registry.register("e2e_sum") { |c| { "value" => c.parent_results.values.sum { |r| r["value"] } } }
    registry.register("e2e_reject") { raise RejectedInput, "account 7 does not exist" }
    registry.register("e2e_shaky") do |c|
      raise ArgumentError, "not yet (attempt #{c.attempt})" if c.attempt < 3

      { "attempts" => c.attempt }
    end
    registry
  end

  # The orchestrator, database and worker, started once for the whole class.
  class Env
    attr_reader :base

    def initialize
      @admin_url = ENV.fetch("DATABASE_URL") { raise "DATABASE_URL is not set: run workers/ruby/test.sh" }
      bin = ENV.fetch("TASKER_ORCHESTRATOR_BIN", File.join(TestSupport::ROOT, "target/debug/tasker-orchestrator"))
      raise "#{bin} is missing: run workers/ruby/test.sh (it builds it)" unless File.executable?(bin)

      @dir = Dir.mktmpdir("tasker-ruby-e2e")
      TEMPLATES.each { |name, yaml| File.write(File.join(@dir, "#{name}.yaml"), yaml) }
      @database = "tasker_rbtest_#{SecureRandom.hex(6)}"
      psql(@admin_url, "CREATE DATABASE #{@database}")
      database_url = @admin_url.sub(%r{/[^/?]*(\?|\z)}) { "/#{@database}#{Regexp.last_match(1)}" }
      port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
      @base = "http://127.0.0.1:#{port}"
      env = { "DATABASE_URL" => database_url, "NO_COLOR" => "1", "RUST_LOG" => "warn,tasker_orchestrator=info" }
      @orchestrator = IO.popen(env, [bin, "--bind", "127.0.0.1:#{port}", "--templates", @dir], err: %i[child out])
      wait_for_line(@orchestrator, "tasker-orchestrator listening", 60)
      @drain = Thread.new { @orchestrator.each_line { |_| nil } }
      # The worker registers its templates with this orchestrator (a no-op: it has them); the
      # core reads its configuration while it starts, so the environment is restored after.
      @worker = with_env("TASKER_WORKER__ORCHESTRATOR_URL" => @base, "TASKER_WORKER__REGISTER_TEMPLATES" => "true") do
        Tasker::Worker.new(templates: @dir, registry: EndToEndTest.registry, concurrency: 4, health_port: 0).start
      end
    end

    def stop
      @worker&.stop
      if @orchestrator
        Process.kill("TERM", @orchestrator.pid)
        Process.wait(@orchestrator.pid)
        @drain&.join
      end
      psql(@admin_url, "DROP DATABASE IF EXISTS #{@database} WITH (FORCE)")
      FileUtils.rm_rf(@dir)
    end

    def create_task(name, context = {})
      request(Net::HTTP::Post.new("/v1/tasks", "content-type" => "application/json"),
              { namespace: "ruby_e2e", name: name, context: context }.to_json)
    end

    # The task once terminal (the API answers as soon as it is).
    def wait_task(id, seconds = 30)
      request(Net::HTTP::Get.new("/v1/tasks/#{id}?wait=#{seconds}"), nil, timeout: seconds + 10)
    end

    def task(id)
      request(Net::HTTP::Get.new("/v1/tasks/#{id}"))
    end

    def steps(id)
      request(Net::HTTP::Get.new("/v1/tasks/#{id}/steps"))["steps"].to_h { |s| [s["name"], s] }
    end

    private

    def request(req, body = nil, timeout: 10)
      uri = URI(@base)
      Net::HTTP.start(uri.host, uri.port, read_timeout: timeout) do |http|
        res = http.request(req, body)
        raise "#{req.method} #{req.path}: #{res.code} #{res.body}" unless res.is_a?(Net::HTTPSuccess)

        JSON.parse(res.body)
      end
    end

    def with_env(vars)
      saved = vars.keys.to_h { |k| [k, ENV.fetch(k, nil)] }
      vars.each { |k, v| ENV[k] = v }
      yield
    ensure
      saved.each { |k, v| ENV[k] = v }
    end

    def psql(url, sql)
      out = IO.popen(["psql", url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], err: %i[child out], &:read)
      raise "psql #{sql}: #{out}" unless $?.success?
    end

    def wait_for_line(io, text, seconds)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      seen = +""
      loop do
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        raise "no #{text.inspect} from the orchestrator within #{seconds} s:\n#{seen}" if left <= 0
        next unless io.wait_readable(left)

        line = io.gets or raise "the orchestrator exited:\n#{seen}"
        seen << line
        return if line.include?(text)
      end
    end
  end

  # Started by the first test; a failure to start fails every test at once, not after a wait each.
  def self.env
    raise @env_error if @env_error

    @env ||= Env.new.tap { |env| Minitest.after_run { env.stop } }
  rescue StandardError => e
    @env_error = e
    raise
  end

  def env
    self.class.env
  end

  def test_steps_run_concurrently_on_the_pool
    task = env.wait_task(env.create_task("fan_out", { value: 5 })["id"])
    assert_equal "complete", task["state"], task.inspect
    assert_equal({ "join" => { "value" => 20 } }, task["result"])
    naps = env.steps(task["id"]).values_at("a", "b", "c", "d")
    starts = naps.map { |s| Time.iso8601(s["started_at"]) }
    ends = naps.map { |s| Time.iso8601(s["finished_at"]) }
    # Each nap lasts 300 ms; on a pool of 4 they all overlap.
    assert_operator starts.max, :<, ends.min, "the four steps did not run at the same time: #{naps.inspect}"
  end

  def test_a_permanent_error_crosses_with_its_class_message_and_backtrace
    task = env.wait_task(env.create_task("reject")["id"])
    assert_equal "error", task["state"]
    step = env.steps(task["id"])["check"]
    assert_equal "failed", step["state"]
    assert_equal 1, step["attempt"], "a permanent error must not be retried"
    assert_equal "EndToEndTest::RejectedInput", step["error"]["kind"]
    assert_equal "account 7 does not exist", step["error"]["message"]
    assert_includes step["error"]["backtrace"], "end_to_end_test.rb"
  end

  def test_an_ordinary_exception_is_retried_by_policy
    task = env.wait_task(env.create_task("retry")["id"])
    assert_equal "complete", task["state"], task.inspect
    assert_equal({ "shaky" => { "attempts" => 3 } }, task["result"])
    assert_equal 3, env.steps(task["id"])["shaky"]["attempt"]
  end

  def test_an_unknown_handler_fails_the_task_at_once
    task = env.wait_task(env.create_task("unknown")["id"])
    assert_equal "error", task["state"]
    step = env.steps(task["id"])["lost"]
    assert_equal "unknown_handler", step["error"]["kind"]
    assert_equal 1, step["attempt"]
  end

  def test_a_slow_handler_never_holds_up_the_others
    slow = env.create_task("slow", { nap_ms: 3_000 })["id"]
    fast = env.wait_task(env.create_task("fan_out", { value: 1, nap_ms: 10 })["id"])
    assert_equal "complete", fast["state"]
    assert_equal "running", env.task(slow)["state"], "the fast task should finish while the slow one runs"
    assert_equal "complete", env.wait_task(slow)["state"]
  end
end
