# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A step with its result, error and the times of each hop (Times, nil until they happen):
    # `dispatched_at` (published to its queue), `started_at` and `finished_at` (the handler's
    # run), `processed_at` (its result applied), `next_attempt_at` (a retry waiting for its
    # backoff). `step_type` is "standard", "decision", "convergence", "batchable" or
    # "batch_worker"; `error` is `{"kind", "message", "backtrace"?}` of a failed attempt.
    Step = Record.struct(
      :id, :name, :handler, :step_type, :state, :attempt, :max_attempts, :result, :error, :worker,
      :created_at, :dispatched_at, :started_at, :finished_at, :processed_at, :next_attempt_at,
      times: %i[created_at dispatched_at started_at finished_at processed_at next_attempt_at]
    )

    # One page of Client#steps_page, in step id order. `next` is the `after:` of the next page,
    # nil on the last one.
    StepPage = Struct.new(:steps, :next, keyword_init: true) do
      def self.from_json(object)
        new(steps: object.fetch("steps").map { |s| Step.from_json(s) }, next: object["next"])
      end
    end
  end
end
