# frozen_string_literal: true

require "test_helper"
require "tasker/testing"

# Tasker::Testing::WorkflowEnv (docs/testing.md): the test kit's scenarios (tests/fixtures/test_kit)
# on the real engine in test mode with Ruby handlers in this process — a week's sleep, a signal
# wait that times out after three days and one that gets its signal, two retries an hour and two
# hours apart, a daily schedule — each in under a second of wall time. tests/fast/test_kit.rs
# runs the same scenarios against a normal orchestrator: same outcomes.
class WorkflowEnvTest < Minitest::Test
  TEMPLATES = File.expand_path("../../../tests/fixtures/test_kit/templates", __dir__)
  NS = "test_kit"
  DAY = 24 * 3600

  def kit
    registry = Tasker::Registry.new
    registry.register("kit_stamp") { |ctx| { "step" => ctx.step_name } }
    registry.register("kit_flaky") do |ctx|
      raise Tasker::RetryableError.new("attempt #{ctx.attempt} fails", kind: "flaky") if ctx.attempt < 3

      { "attempts" => ctx.attempt }
    end
    registry.register("kit_echo") { |ctx| ctx.parent_results }
    registry
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def run_one(env, name, signal = nil)
    started = monotonic
    task = env.client.create_task(NS, name)
    env.client.signal(task.id, "approved", signal) if signal
    [env.wait(task.id), monotonic - started]
  end

  def steps(env, id)
    env.client.steps(id).to_h { |s| [s.name, s] }
  end

  def test_days_of_waits_retries_and_a_schedule_pass_in_under_a_second_each
    Tasker::Testing::WorkflowEnv.open(TEMPLATES, registry: kit) do |env|
      week, wall = run_one(env, "week")
      assert_equal "complete", week.state
      assert_operator wall, :<, 1.0
      s = steps(env, week.id)
      assert_operator s["after"].processed_at - s["before"].processed_at, :>=, 7 * DAY

      timed_out, wall = run_one(env, "approval")
      assert_equal ["complete", true], [timed_out.state, wall < 1.0]
      assert_equal({ "ask" => { "timed_out" => true } }, steps(env, timed_out.id)["decide"].result)
      approved, wall = run_one(env, "approval", { "by" => "ana" })
      assert_equal ["complete", true], [approved.state, wall < 1.0]
      assert_equal({ "by" => "ana" }, steps(env, approved.id)["decide"].result["ask"])

      flaky, wall = run_one(env, "flaky")
      assert_equal ["complete", true], [flaky.state, wall < 1.0]
      f = steps(env, flaky.id)["flaky"]
      assert_equal [3, { "attempts" => 3 }], [f.attempt, f.result]
      assert_operator f.processed_at - flaky.created_at, :>=, 3 * 3600

      started = monotonic
      env.client.apply_schedule("namespace" => NS, "name" => "daily", "template" => "report", "cron" => "0 6 * * *")
      [1, 2].each do |day|
        skipped = env.skip
        assert skipped["skipped"], skipped.inspect
        assert_match(/T06:00:00/, skipped["clock"]["now"])
        reports = env.client.list_tasks(namespace: NS, name: "report").tasks
        assert_equal day, reports.size
        assert_equal "complete", env.wait(reports.first.id).state
      end
      assert_operator monotonic - started, :<, 1.0

      before = Time.parse(env.now)
      clock = env.advance("3d")
      assert clock["test_clock"]
      assert_operator Time.parse(clock["now"]) - before, :>=, 3 * DAY
    end
  end
end
