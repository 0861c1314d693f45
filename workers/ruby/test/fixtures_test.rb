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

  def test_signal_wait_finish_doubles_the_value_and_says_who_approved
    approval = { "approval" => { "approved_by" => "conformance" } }
    assert_equal({ "value" => 10, "approved_by" => "conformance" },
                 call("signal_wait_finish", context: { "value" => 5 }, parents: approval))
    # A payload without the field (or a wait that timed out and continued) approves nobody.
    assert_equal({ "value" => 10, "approved_by" => nil },
                 call("signal_wait_finish", context: { "value" => 5 }, parents: { "approval" => { "timed_out" => true } }))
    assert_equal "invalid_input", error("signal_wait_finish", context: { "value" => "5" }, parents: approval).kind
    assert_equal "overflow", error("signal_wait_finish", context: { "value" => 2**62 }, parents: approval).kind
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

  def test_pipeline_aggregate_sums_per_user_and_type_sorted
    events = [[8215, 0, 9734], [2561, 2, 5726], [8215, 0, 6424], [8215, 2, 1], [2561, 0, 3]]
    rows = call("pipeline_aggregate", parents: { "rules" => { "events" => events } })["rows"]
    assert_equal [[2561, 0, 1, 3], [2561, 2, 1, 5726], [8215, 0, 2, 16_158], [8215, 2, 1, 1]], rows
    assert_equal({ "rows" => [] }, call("pipeline_aggregate", parents: { "rules" => { "events" => [] } }))
    assert_equal "invalid_input", error("pipeline_aggregate", parents: { "rules" => {} }).kind
    assert_equal "invalid_input", error("pipeline_aggregate", parents: { "rules" => { "events" => [[1, 5, 2]] } }).kind
    assert_equal "invalid_input", error("pipeline_aggregate", parents: { "rules" => { "events" => [nil] } }).kind
  end
end

# The csv_products handlers against tests/fixtures/products.csv, with the figures the
# conformance scenario expects.
class CsvFixturesTest < Minitest::Test
  include TestSupport

  CSV_PATH = File.join(ROOT, "tests/fixtures/products.csv")

  def call(name, **kwargs)
    Tasker.registry[name].call(Tasker::Context.new(job(name, **kwargs)))
  end

  def test_split_process_and_aggregate_give_the_expected_totals
    split = call("csv_split", context: { "csv_path" => CSV_PATH, "batch_size" => 200 })
    assert_equal 1000, split["rows"]
    assert_equal [0, 200, 400, 600, 800], split["batches"].map { |b| b["start"] }
    assert_equal 1000, split["batches"].last["end"]
    parents = { "split" => split }
    split["batches"].each_with_index do |batch, i|
      j = job("csv_process_batch", context: { "csv_path" => CSV_PATH }).merge("input" => batch)
      parents["process##{i}"] = Tasker.registry["csv_process_batch"].call(Tasker::Context.new(j))
      assert_equal 200, parents["process##{i}"]["rows"]
    end
    total = call("csv_aggregate", parents: parents)
    assert_equal 1000, total["rows_processed"]
    assert_equal({ "beauty" => 116, "electronics" => 123, "garden" => 139, "kitchen" => 122, "office" => 107,
                   "outdoors" => 138, "sports" => 134, "toys" => 121 }, total["per_category"])
    assert_equal 5_492_259_312, total["total_inventory_value_cents"]
    assert_equal "54922593.12", total["total_inventory_value"]
    assert_equal 5, total["batches"]
    assert_equal 0, total["failed_batches"]
  end

  def test_failed_batches_are_counted_and_prices_parse_as_in_rust
    total = call("csv_aggregate", parents: { "process#0" => { "failed" => true, "error" => {} } })
    assert_equal 1, total["failed_batches"]
    assert_equal "0.00", total["total_inventory_value"]
    assert_equal 1234, Fixtures::Csv.cents("12.34")
    assert_equal 700, Fixtures::Csv.cents("7")
    assert_equal 50, Fixtures::Csv.cents("0.5")
    assert_nil Fixtures::Csv.cents("1.234")
    assert_nil Fixtures::Csv.cents("x.10")
  end

  def test_a_file_outside_the_fixtures_folder_is_refused
    # A task's context names the file: only the fixtures folder (TASKER_CSV_ROOT) may be read.
    e = assert_raises(Tasker::PermanentError) { call("csv_split", context: { "csv_path" => "/etc/passwd" }) }
    assert_equal "invalid_input", e.kind
    assert_includes e.message, "must name a file under"
  end

  def test_a_missing_file_and_a_missing_batch_are_permanent
    e = assert_raises(Tasker::PermanentError) { call("csv_split", context: { "csv_path" => "/nonexistent.csv" }) }
    assert_equal "io", e.kind
    e = assert_raises(Tasker::PermanentError) { call("csv_process_batch", context: { "csv_path" => CSV_PATH }) }
    assert_equal "invalid_input", e.kind
  end
end
