# frozen_string_literal: true

module Tasker
  # What a handler receives: one attempt of one step. Hash keys are strings, as in the JSON the
  # task was created with.
  class Context
    # The task's context (Hash).
    attr_reader :context
    # Results of the step's completed parents, by step name (Hash of Hashes).
    attr_reader :parent_results
    attr_reader :task_id, :step_id, :namespace, :task_name, :step_name, :handler
    # 1 on the first attempt.
    attr_reader :attempt, :max_attempts
    # The step's timeout in milliseconds.
    attr_reader :timeout_ms
    # For an instance of a `batch_worker` step: its batch, as the batchable parent returned it
    # (e.g. {"start" => 0, "end" => 200}); nil for other steps.
    attr_reader :input

    def initialize(job)
      @context = job.fetch("context")
      @parent_results = job.fetch("parent_results")
      @task_id = job.fetch("task_id")
      @step_id = job.fetch("step_id")
      @namespace = job.fetch("namespace")
      @task_name = job.fetch("task_name")
      @step_name = job.fetch("step_name")
      @handler = job.fetch("handler")
      @attempt = job.fetch("attempt")
      @max_attempts = job.fetch("max_attempts")
      @timeout_ms = job.fetch("timeout_ms")
      @input = job["input"]
    end

    # True on the step's last allowed attempt.
    def last_attempt?
      attempt >= max_attempts
    end
  end
end
