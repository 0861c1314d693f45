# frozen_string_literal: true

require "test_helper"

# Parent results carried by reference are read through the native worker's
# #parent_results_page, a page at a time (the end-to-end read is tests/slow/references.rs).
class ContextTest < Minitest::Test
  include TestSupport

  # Two pages, recording which cursors were asked for.
  class Pages
    attr_reader :asked

    def initialize
      @asked = []
    end

    def parent_results_page(_task_id, _step_id, after)
      @asked << after
      after.nil? ? ['{"a":{"v":1},"b":{"v":2}}', "c1"] : ['{"c":{"v":3}}', nil]
    end
  end

  def by_reference
    job("h").merge("parent_results_by_reference" => true)
  end

  def test_carried_parent_results_need_no_reader
    c = ctx(parents: { "a" => { "v" => 1 } })
    assert_equal({ "a" => { "v" => 1 } }, c.parent_results)
    assert_equal [["a", { "v" => 1 }]], c.each_parent_result.to_a
  end

  def test_each_parent_result_reads_the_next_page_only_when_the_last_is_used_up
    pages = Pages.new
    seen = []
    Tasker::Context.new(by_reference, pages).each_parent_result { |name, r| seen << [name, r["v"], pages.asked.size] }
    assert_equal [["a", 1, 1], ["b", 2, 1], ["c", 3, 2]], seen
    assert_equal [nil, "c1"], pages.asked
  end

  def test_parent_results_reads_every_page_once_and_keeps_them
    pages = Pages.new
    c = Tasker::Context.new(by_reference, pages)
    expected = { "a" => { "v" => 1 }, "b" => { "v" => 2 }, "c" => { "v" => 3 } }
    assert_equal expected, c.parent_results
    assert_equal expected, c.parent_results
    assert_equal 2, pages.asked.size
  end

  def test_a_job_by_reference_without_a_reader_is_refused
    assert_raises(ArgumentError) { Tasker::Context.new(by_reference) }
  end

  def test_an_unreachable_orchestrator_fails_the_step_retryably_with_its_kind
    unreachable = Object.new
    def unreachable.parent_results_page(*)
      raise Tasker::ReferenceUnavailable, "orchestrator down"
    end
    registry = Tasker::Registry.new
    registry.register("h") { |c| c.parent_results }
    out = JSON.parse(Tasker::Runner.new(registry, native: unreachable).call(by_reference))
    assert_equal "failure", out["status"]
    assert_equal true, out["retryable"]
    assert_equal "reference_unavailable", out["error"]["kind"]
  end

  # Takes chunks like the native worker, refusing those of topic "full".
  class Emits
    attr_reader :sent

    def initialize
      @sent = []
    end

    def emit(job, topic, payload, text)
      @sent << [job, topic, payload, text]
      topic == "full" ? ["stream_too_large", "the step's stream would exceed 10 bytes"] : nil
    end
  end

  def test_emit_hands_json_and_text_to_the_core_and_a_refusal_raises_its_kind
    native = Emits.new
    c = Tasker::Context.new(job("h").merge("id" => 7), native)
    c.emit_text("tokens", "Hel")
    c.emit("progress", { "pct" => 40 })
    assert_equal [[7, "tokens", "Hel", true], [7, "progress", '{"pct":40}', false]], native.sent
    refused = assert_raises(Tasker::StreamError) { c.emit_text("full", "x") }
    assert_equal "stream_too_large", refused.kind
    assert_kind_of Tasker::PermanentError, refused
    bad = assert_raises(Tasker::StreamError) { c.emit("progress", Float::NAN) }
    assert_equal "invalid_stream_chunk", bad.kind
    assert_empty c.emitted
  end

  def test_without_a_worker_what_a_handler_emits_is_kept_on_its_context
    c = Tasker::Context.new(job("h"))
    c.emit_text("tokens", "a")
    c.emit("progress", [1])
    assert_equal [["tokens", "a"], ["progress", [1]]], c.emitted
  end
end
