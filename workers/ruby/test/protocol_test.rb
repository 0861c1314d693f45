# frozen_string_literal: true

require "test_helper"
require "set" # json_schemer 0.2 uses Set without requiring it
require "json_schemer"
require "minitest/mock"

# The worker protocol check, the same in every language (tests/slow/conformance.rs runs it through
# conformance-protocol): the examples of tests/conformance/protocol.json against the schema
# tasker-worker/protocol.schema.json; the step context made from each job; the outcome this gem
# encodes for each case's handler; the start options Tasker::Worker.start sends.
class ProtocolTest < Minitest::Test
  include TestSupport

  SCHEMA = JSON.parse(File.read(File.join(ROOT, "tasker-worker/protocol.schema.json")))
  EXAMPLES = JSON.parse(File.read(File.join(ROOT, "tests/conformance/protocol.json")))

  def validator(name)
    JSONSchemer.schema(SCHEMA.merge("$ref" => "#/definitions/#{name}"))
  end

  def assert_valid(name, value)
    errors = validator(name).validate(value).map { |e| "#{e["data_pointer"]}: #{e["type"]}" }
    assert_empty errors, "#{name} #{JSON.generate(value)}"
  end

  # +got+ has every field +want+ gives, equal (Hashes compared the same way).
  def matches?(got, want)
    return got == want unless got.is_a?(Hash) && want.is_a?(Hash)

    want.all? { |k, v| got.key?(k) && matches?(got[k], v) }
  end

  def handler_for(behaviour)
    lambda do |_ctx|
      case behaviour["raises"]
      when nil then behaviour["returns"]
      when "permanent" then raise Tasker::PermanentError.new(behaviour["message"], kind: behaviour["kind"])
      when "retryable"
        raise Tasker::RetryableError.new(behaviour["message"], kind: behaviour["kind"],
                                                               retry_after: behaviour["retry_after"])
      else raise IOError, behaviour["message"]
      end
    end
  end

  def test_each_job_follows_the_schema_and_makes_its_step_context
    EXAMPLES["jobs"].each do |job|
      assert_valid("job", job)
      if job["parent_results_by_reference"]
        assert_raises(ArgumentError) { Tasker::StepContext.new(job) }
        next
      end
      ctx = Tasker::StepContext.new(job)
      %w[task_id step_id namespace task_name step_name handler attempt max_attempts context input].each do |field|
        assert job[field] == ctx.public_send(field), "#{field}: #{ctx.public_send(field).inspect}"
      end
      assert_equal job["parent_results"], ctx.parent_results
      assert_equal job["timeout_ms"] / 1000.0, ctx.timeout, "seconds"
      assert ctx.heartbeat, "outside a worker a step is always its handler's"
    end
  end

  def test_each_case_gives_its_outcome
    job = EXAMPLES["jobs"].first
    EXAMPLES["cases"].each do |c|
      registry = Tasker::Registry.new
      registry.register(job["handler"], handler_for(c["handler"]))
      encoded = JSON.parse(Tasker::Runner.new(registry).call(job))
      assert_valid("outcome", encoded)
      assert_equal job["id"], encoded["id"]
      assert matches?(encoded, c["outcome"]), "#{c["name"]}: #{encoded}"
    end
  end

  def test_the_schema_tells_outcomes_from_what_are_not
    EXAMPLES["outcomes"].each { |o| assert_valid("outcome", o) }
    check = validator("outcome")
    EXAMPLES["invalid_outcomes"].each { |bad| refute check.valid?(bad["outcome"]), bad["why"] }
  end

  def test_worker_start_sends_start_options_the_schema_takes
    EXAMPLES["start_options"].each do |example|
      sent = JSON.parse(Tasker::Worker.start_options(**example.transform_keys(&:to_sym)))
      assert_valid("start_options", sent)
      assert_equal example.compact, sent
    end
    check = validator("start_options")
    EXAMPLES["invalid_start_options"].each { |bad| refute check.valid?(bad["options"]), bad["why"] }
  end

  # A core that hands out no step: enough for Worker#start and #stop.
  class IdleCore
    def concurrency = 1
    def shutdown_timeout = 1

    def take_steps(_max, wait)
      sleep([wait, 0.01].min)
      "[]"
    end

    def shutdown; end
    def stop; end
  end

  # The core consumes only the namespaces of the steps whose handlers the worker has: the
  # registry's names go in `start_options` (sorted), and none are sent unless given.
  def test_worker_start_tells_the_core_the_handlers_it_registered
    sent = []
    start = lambda do |options|
      sent << JSON.parse(options)
      IdleCore.new
    end
    registry = Tasker::Registry.new.register("score") { nil }.register("double") { nil }
    Tasker::NativeWorker.stub(:start, start) do
      Tasker::Worker.start(templates: "templates/", registry: registry, concurrency: 2).stop
      Tasker::Worker.start(templates: "templates/", registry: Tasker::Registry.new).stop
    end
    assert_equal [{ "templates" => "templates/", "concurrency" => 2, "handlers" => %w[double score] },
                  { "templates" => "templates/", "handlers" => [] }], sent
    refute JSON.parse(Tasker::Worker.start_options(templates: "t")).key?("handlers")
  end
end
