# frozen_string_literal: true

require "test_helper"

class RegistryTest < Minitest::Test
  include TestSupport

  def setup
    @registry = Tasker::Registry.new
  end

  def test_a_handler_class_registers_itself_and_one_instance_runs_every_step
    registry = @registry
    Class.new(Tasker::Handler) do
      handles "count_calls", registry: registry

      # Defined after `handles`: the instance is made at the first step, so this runs.
      def initialize
        super
        @calls = 0
      end

      def call(ctx)
        @calls += 1
        { "value" => ctx.context["value"] * 2, "calls" => @calls }
      end
    end
    assert_equal ["count_calls"], registry.names
    assert_equal({ "value" => 8, "calls" => 1 }, registry["count_calls"].call(ctx(context: { "value" => 4 })))
    assert_equal({ "value" => 8, "calls" => 2 }, registry["count_calls"].call(ctx(context: { "value" => 4 })))
  end

  def test_prepare_makes_the_class_instances_so_a_constructor_error_stops_the_start
    registry = @registry
    made = []
    Class.new(Tasker::Handler) do
      handles "made_at_start", registry: registry
      define_method(:initialize) { made << :made }
      def call(_ctx) = 1
    end
    Class.new(Tasker::Handler) do
      handles "broken_at_start", registry: registry
      def initialize = raise(ArgumentError, "no API key")
    end
    error = assert_raises(ArgumentError) { registry.prepare }
    assert_equal "no API key", error.message
    assert_equal [:made], made
    registry["made_at_start"].call(ctx)
    assert_equal [:made], made, "one instance, made once"
  end

  def test_the_same_handler_twice_under_one_name_is_refused_too
    handler = ->(_c) { 1 }
    @registry.register("x", handler)
    assert_raises(ArgumentError) { @registry.register("x", handler) }
  end

  def test_blocks_and_callables_register_under_a_name
    @registry.register("triple") { |c| { "value" => c.context["value"] * 3 } }
    @registry.register(:negate, ->(c) { { "value" => -c.context["value"] } })
    assert_equal({ "value" => 21 }, @registry["triple"].call(ctx(context: { "value" => 7 })))
    assert_equal({ "value" => -7 }, @registry["negate"].call(ctx(context: { "value" => 7 })))
    assert_nil @registry["missing"]
  end

  def test_a_name_taken_by_another_handler_is_refused
    @registry.register("x") { 1 }
    error = assert_raises(ArgumentError) { @registry.register("x") { 2 } }
    assert_match(/already registered/, error.message)
  end

  def test_something_that_cannot_be_called_is_refused
    assert_raises(ArgumentError) { @registry.register("nothing") }
    assert_raises(ArgumentError) { @registry.register("string", "not callable") }
  end

  def test_the_base_handler_says_call_is_missing
    klass = Class.new(Tasker::Handler)
    assert_raises(NotImplementedError) { klass.new.call(ctx) }
  end

  def test_context_exposes_the_step
    c = ctx(context: { "value" => 1 }, parents: { "a" => { "value" => 2 } }, attempt: 3, max_attempts: 3)
    assert_equal({ "value" => 1 }, c.context)
    assert_equal({ "a" => { "value" => 2 } }, c.parent_results)
    assert_equal "s", c.step_name
    assert_equal 3, c.attempt
    assert c.last_attempt?
    assert_equal 5_000, c.timeout_ms
    assert_match(/\A\h{8}-/, c.task_id)
  end
end
