# frozen_string_literal: true

require "test_helper"
require "tasker/testing"
require_relative "../fixtures/handlers"

# Tasker::Testing: handler tests with no server, judged by the worker core as the engine would.
class TestingTest < Minitest::Test
  include TestSupport

  def run_handler(*args, **kwargs, &block)
    Tasker::Testing.run_handler(*args, **kwargs, &block)
  end

  def template(name)
    File.join(FIXTURE_TEMPLATES, name)
  end

  def test_a_decision_from_its_template_names_its_branch
    small = run_handler("route_by_size", template: template("conditional.yaml"), step: "route",
                                         parent_results: { "check" => { "value" => 7 } })
    assert small.success?, small.inspect
    assert_equal ["small"], small.branches
    assert_equal({ "branches" => ["small"], "value" => 7 }, small.result)
    bad = run_handler(step_type: "decision", branches: %w[small large]) { |_ctx| { "branches" => ["medium"] } }
    assert_equal ["failure", "invalid_decision", false, false], [bad.status, bad.kind, bad.retryable, bad.retried]
    assert_equal "invalid_batches", run_handler(step_type: "batchable") { |_ctx| { "rows" => 3 } }.kind
  end

  def test_retries_follow_the_templates_policy
    first = run_handler("flaky", template: template("retry_then_succeed.yaml"), step: "flaky",
                                 context: { "succeed_on_attempt" => 3 })
    assert_equal ["failure", "transient", true, true], [first.status, first.kind, first.retryable, first.retried]
    assert_in_delta 0.02, first.retry_in, 1e-9
    last = run_handler("flaky", template: template("retry_then_succeed.yaml"), step: "flaky",
                                attempt: 3, context: { "succeed_on_attempt" => 4 })
    assert_equal [true, false, nil], [last.retryable, last.retried, last.retry_in]
  end

  def test_bad_results_timeouts_streams_and_batches
    nan = run_handler { |_ctx| { "x" => Float::NAN } }
    assert_equal ["invalid_result", false], [nan.kind, nan.retryable]
    slow = run_handler(timeout: 0.05) { |_ctx| sleep 5 }
    assert_equal ["timeout", true], [slow.kind, slow.retryable]
    out = run_handler(input: { "rows" => [1, 2, 3] }, attempt: 2, max_attempts: 5) do |ctx|
      ctx.emit("progress", { "rows" => ctx.input["rows"].size })
      { "sum" => ctx.input["rows"].sum, "attempt" => ctx.attempt, "of" => ctx.max_attempts }
    end
    assert_equal({ "sum" => 6, "attempt" => 2, "of" => 5 }, out.result)
    assert_equal [["progress", { "rows" => 3 }]], out.emitted
  end

  def test_an_unknown_name_and_a_bad_step
    unknown = run_handler("nobody", registry: Tasker::Registry.new)
    assert_equal ["unknown_handler", false], [unknown.kind, unknown.retryable]
    e = assert_raises(ArgumentError) { run_handler(attempt: 4, max_attempts: 3) { |_ctx| 1 } }
    assert_match(/attempt 4 is not between 1 and max_attempts/, e.message)
    e = assert_raises(ArgumentError) { run_handler("route_by_size", template: template("conditional.yaml"), step: "nope") }
    assert_match(/no step "nope"/, e.message)
  end
end
