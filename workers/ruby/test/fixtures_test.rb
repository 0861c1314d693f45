# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/handlers"

# The fixture handlers must compute what tasker-worker-rust/src/handlers.rs computes.
class FixturesTest < Minitest::Test
  include TestSupport

  I64_MAX = (2**63) - 1

  def call(name, **kwargs)
    Tasker.registry[name].call(ctx(**kwargs))
  end

  def error(name, **kwargs)
    assert_raises(Tasker::Error) { call(name, **kwargs) }
  end

  def test_root_reads_context_and_children_sum_parents
    assert_equal({ "value" => 12 }, call("double", context: { "value" => 6 }))
    parents = { "a" => { "value" => 36 }, "b" => { "value" => 16 } }
    assert_equal({ "value" => 52 }, call("sum_parents", parents: parents))
    assert_equal({ "value" => 62 }, call("add_ten", parents: parents))
    assert_equal({ "value" => 49 }, call("square", context: { "value" => -7 }))
  end

  def test_halve_truncates_toward_zero_as_rust_does
    assert_equal({ "value" => 3 }, call("halve", context: { "value" => 7 }))
    assert_equal({ "value" => -3 }, call("halve", context: { "value" => -7 }))
  end

  def test_bad_input_and_overflow_are_permanent
    e = error("double", context: { "value" => "x" })
    assert_kind_of Tasker::PermanentError, e
    assert_equal "invalid_input", e.kind
    assert_equal "invalid_input", error("double", context: { "value" => 6.0 }).kind
    assert_equal "invalid_input", error("sum_parents", parents: { "a" => { "other" => 1 } }).kind
    e = error("square", context: { "value" => I64_MAX })
    assert_equal "overflow", e.kind
    assert_equal "#{I64_MAX} overflows", e.message
    assert_equal "overflow", error("sum_parents", parents: { "a" => { "value" => I64_MAX }, "b" => { "value" => 1 } }).kind
  end

  def test_decision_routes_by_size
    assert_equal({ "branches" => ["large"], "value" => 84 }, call("route_by_size", parents: { "c" => { "value" => 84 } }))
    assert_equal({ "branches" => ["small"], "value" => 14 }, call("route_by_size", parents: { "c" => { "value" => 14 } }))
    assert_equal ["large"], call("route_by_size", parents: { "c" => { "value" => 50 } })["branches"]
  end

  def test_flaky_fails_retryably_until_its_attempt
    e = error("flaky", attempt: 2)
    assert_kind_of Tasker::RetryableError, e
    assert_equal "transient", e.kind
    assert_equal "attempt 2 fails, 3 succeeds", e.message
    assert_equal({ "attempts" => 3 }, call("flaky", attempt: 3))
    assert_equal({ "attempts" => 1 }, call("flaky", context: { "succeed_on_attempt" => 1 }, attempt: 1))
  end

  def test_echo_sleep_and_the_failing_handlers
    parents = { "flaky" => { "attempts" => 3 } }
    assert_equal({ "attempt" => 1, "parents" => parents }, call("echo_attempts", parents: parents))
    assert_equal({ "slept_ms" => 1 }, call("sleep", context: { "sleep_ms" => 1 }))
    e = error("fail_permanently")
    assert_kind_of Tasker::PermanentError, e
    assert_equal "input rejected for good", e.message
    e = assert_raises(RuntimeError) { call("panic") }
    assert_equal "this handler always panics", e.message
  end
end
