# frozen_string_literal: true

require "minitest/autorun"
require "securerandom"
require "tasker"

# Queues of this run are prefixed apart from everyone else's (the core reads it at start).
ENV["TASKER_QUEUE_PREFIX"] = "rbtest_#{SecureRandom.hex(4)}"

module TestSupport
  ROOT = File.expand_path("../../..", __dir__)
  FIXTURE_TEMPLATES = File.join(ROOT, "tests/fixtures/task_templates/ruby")

  # A job as the core hands it over (see tasker_worker::JobView).
  def job(handler, context: {}, parents: {}, attempt: 1, max_attempts: 3, timeout_ms: 5_000, id: 1)
    {
      "id" => id, "task_id" => SecureRandom.uuid, "step_id" => SecureRandom.uuid,
      "namespace" => "ruby_examples", "task_name" => "t", "step_name" => "s", "handler" => handler,
      "attempt" => attempt, "max_attempts" => max_attempts, "context" => context,
      "parent_results" => parents, "timeout_ms" => timeout_ms
    }
  end

  def ctx(**kwargs)
    Tasker::Context.new(job("h", **kwargs))
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Runs the block with the environment variables +vars+ set (nil unsets), then restores them.
  def self.with_env(vars)
    saved = vars.keys.to_h { |k| [k, ENV.fetch(k, nil)] }
    vars.each { |k, v| ENV[k] = v }
    yield
  ensure
    saved&.each { |k, v| ENV[k] = v }
  end

  def with_env(vars, &block)
    TestSupport.with_env(vars, &block)
  end
end
