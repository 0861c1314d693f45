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
end
