# frozen_string_literal: true

require "test_helper"
require "support/cluster"

# Ruby handlers behind the real binding, a real orchestrator (target/debug/tasker-orchestrator),
# PostgreSQL and RabbitMQ. One cluster (an orchestrator, a database and queues of its own) and one
# in-process Tasker::Worker serve every test here; Tasker::Client drives them.
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
    "pulse" => <<~YAML,
      namespace: ruby_e2e
      name: pulse
      version: 1.0.0
      steps:
        - { name: pulse, handler: e2e_pulse, timeout_seconds: 20 }
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
    registry.register("e2e_pulse") { |c| { "heartbeat" => c.heartbeat, "timeout" => c.timeout } }
    registry.register("e2e_reject") { raise RejectedInput, "account 7 does not exist" }
    registry.register("e2e_shaky") do |c|
      raise ArgumentError, "not yet (attempt #{c.attempt})" if c.attempt < 3

      { "attempts" => c.attempt }
    end
    registry
  end

  extend TestSupport::Cluster::OwnHandlers

  # A task of ruby_e2e/+name+, once terminal (the API answers as soon as it is).
  def run_task(name, context = {})
    client.wait(client.create_task("ruby_e2e", name, context).id, 30)
  end

  def steps(id)
    client.steps(id).to_h { |s| [s.name, s] }
  end

  def test_steps_run_concurrently_on_the_pool
    task = run_task("fan_out", { value: 5 })
    assert_equal "complete", task.state, task.inspect
    assert_equal({ "join" => { "value" => 20 } }, task.result)
    naps = steps(task.id).values_at("a", "b", "c", "d")
    starts = naps.map(&:started_at)
    ends = naps.map(&:finished_at)
    # Each nap lasts 300 ms; on a pool of 4 they all overlap.
    assert_operator starts.max, :<, ends.min, "the four steps did not run at the same time: #{naps.inspect}"
  end

  def test_a_permanent_error_crosses_with_its_class_message_and_backtrace
    task = run_task("reject")
    assert_equal "error", task.state
    step = steps(task.id)["check"]
    assert_equal "failed", step.state
    assert_equal 1, step.attempt, "a permanent error must not be retried"
    assert_equal "RejectedInput", step.error["kind"]
    assert_equal "account 7 does not exist", step.error["message"]
    assert_includes step.error["backtrace"], "end_to_end_test.rb"
  end

  def test_an_ordinary_exception_is_retried_by_policy
    task = run_task("retry")
    assert_equal "complete", task.state, task.inspect
    assert_equal({ "shaky" => { "attempts" => 3 } }, task.result)
    assert_equal 3, steps(task.id)["shaky"].attempt
  end

  def test_a_running_step_is_its_workers_and_its_timeout_is_in_seconds
    task = run_task("pulse")
    assert_equal "complete", task.state, task.inspect
    assert_equal({ "pulse" => { "heartbeat" => true, "timeout" => 20.0 } }, task.result)
  end

  def test_an_unknown_handler_fails_the_task_at_once
    task = run_task("unknown")
    assert_equal "error", task.state
    step = steps(task.id)["lost"]
    assert_equal "unknown_handler", step.error["kind"]
    assert_equal 1, step.attempt
  end

  def test_a_slow_handler_never_holds_up_the_others
    slow = client.create_task("ruby_e2e", "slow", { nap_ms: 3_000 }).id
    fast = run_task("fan_out", { value: 1, nap_ms: 10 })
    assert_equal "complete", fast.state
    assert_equal "running", client.get_task(slow).state, "the fast task should finish while the slow one runs"
    assert_equal "complete", client.wait(slow, 30).state
  end
end
