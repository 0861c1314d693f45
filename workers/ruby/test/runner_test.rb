# frozen_string_literal: true

require "test_helper"

class RunnerTest < Minitest::Test
  include TestSupport

  class RejectedInput < Tasker::PermanentError; end

  def setup
    @registry = Tasker::Registry.new
    @registry.register("ok") { |c| { "value" => c.context["value"] } }
    @registry.register("permanent") { raise Tasker::PermanentError, "input rejected for good" }
    @registry.register("permanent_subclass") { raise RejectedInput, "no such account" }
    @registry.register("permanent_kind") { raise Tasker::PermanentError.new("bad", kind: "validation") }
    @registry.register("retryable_kind") { raise Tasker::RetryableError.new("later", kind: "transient") }
    @registry.register("rate_limited") do
      raise Tasker::RetryableError.new("slow down", kind: "rate_limited", retry_after: 2.5)
    end
    @registry.register("ordinary") { raise ArgumentError, "ordinary failure" }
    @registry.register("nan") { { "value" => Float::NAN } }
    @registry.register("exit") { exit 3 }
    @runner = Tasker::Runner.new(@registry)
  end

  def run_job(handler, **kwargs)
    JSON.parse(@runner.call(job(handler, id: 42, **kwargs)))
  end

  def test_success_carries_the_result_and_timings
    out = run_job("ok", context: { "value" => 5 })
    assert_equal 42, out["id"]
    assert_equal "success", out["status"]
    assert_equal({ "value" => 5 }, out["result"])
    assert_kind_of Float, out["started_at"]
    assert out["started_at"] <= out["finished_at"]
    assert_in_delta Time.now.to_f, out["finished_at"], 60
  end

  def test_permanent_error_stops_retries_with_class_message_and_backtrace
    out = run_job("permanent")
    assert_equal "failure", out["status"]
    assert_equal false, out["retryable"]
    assert_equal "PermanentError", out["error"]["kind"]
    assert_equal "input rejected for good", out["error"]["message"]
    assert_includes out["error"]["backtrace"], "runner_test.rb"
  end

  def test_a_subclass_of_permanent_error_is_permanent_and_reports_its_own_class
    out = run_job("permanent_subclass")
    assert_equal false, out["retryable"]
    assert_equal "RejectedInput", out["error"]["kind"]
  end

  def test_an_explicit_kind_replaces_the_class_name
    assert_equal "validation", run_job("permanent_kind")["error"]["kind"]
    out = run_job("retryable_kind")
    assert_equal true, out["retryable"]
    assert_equal "transient", out["error"]["kind"]
    refute out.key?("retry_after_ms"), "no delay unless asked for"
  end

  def test_a_retryable_error_may_ask_for_its_retry_delay
    out = run_job("rate_limited")
    assert_equal true, out["retryable"]
    assert_equal "rate_limited", out["error"]["kind"]
    assert_equal 2500, out["retry_after_ms"]
    assert_raises(ArgumentError) { Tasker::RetryableError.new("x", retry_after: -1) }
    assert_raises(ArgumentError) { Tasker::RetryableError.new("x", retry_after: "soon") }
  end

  def test_any_other_exception_is_retryable_with_its_class_message_and_backtrace
    out = run_job("ordinary")
    assert_equal true, out["retryable"]
    assert_equal "ArgumentError", out["error"]["kind"]
    assert_equal "ordinary failure", out["error"]["message"]
    assert_match(/runner_test\.rb:\d+/, out["error"]["backtrace"])
  end

  def test_exit_in_a_handler_fails_the_step_not_the_worker
    out = run_job("exit")
    assert_equal "SystemExit", out["error"]["kind"]
    assert_equal true, out["retryable"]
  end

  def test_unknown_handler_is_a_permanent_failure
    out = run_job("nobody_home")
    assert_equal false, out["retryable"]
    assert_equal "unknown_handler", out["error"]["kind"]
    assert_includes out["error"]["message"], "\"nobody_home\""
  end

  def test_a_result_json_cannot_encode_is_a_permanent_failure
    out = run_job("nan")
    assert_equal false, out["retryable"]
    assert_equal "invalid_result", out["error"]["kind"]
    refute out.key?("result")
  end

  def test_a_handler_past_its_timeout_is_interrupted_and_its_thread_freed
    watchdog = Tasker::Watchdog.new
    @registry.register("stuck") { sleep 30 }
    runner = Tasker::Runner.new(@registry, watchdog: watchdog)
    started = monotonic
    out = Thread.handle_interrupt(Tasker::TimeoutError => :never) do
      JSON.parse(runner.call(job("stuck", timeout_ms: 100)))
    end
    assert_operator monotonic - started, :<, 5
    assert_equal "timeout", out["error"]["kind"]
    assert_equal true, out["retryable"]
    assert_includes out["error"]["message"], "100 ms"
    # The thread is usable again, with no interrupt left over for the next step.
    out = Thread.handle_interrupt(Tasker::TimeoutError => :never) do
      JSON.parse(runner.call(job("ok", context: { "value" => 1 }, timeout_ms: 5_000)))
    end
    assert_equal "success", out["status"]
  ensure
    watchdog&.stop
  end
end
