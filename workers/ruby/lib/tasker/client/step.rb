# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # What a wait step waits for: `kind` "sleep" (a duration), "until" (a time from the task's
    # context) or "signal" (the signal named `signal`). `until` (a Time) is when it wakes up, or
    # times out waiting for its signal; `on_timeout` ("fail", "skip" or "continue") what a
    # signal wait does then.
    StepWait = Record.struct(:kind, :signal, :until, :on_timeout, times: %i[until])

    # A step with its result, error and the times of each hop (Times, nil until they happen):
    # `dispatched_at` (published to its queue), `started_at` and `finished_at` (the handler's
    # run), `processed_at` (its result applied), `next_attempt_at` (a retry waiting for its
    # backoff). `step_type` is "standard", "decision", "convergence", "batchable",
    # "batch_worker" or "wait"; `error` is `{"kind", "message", "backtrace"?}` of a failed
    # attempt. A wait step (run by the orchestrator, no handler of yours) has its `wait`, a
    # StepWait (nil for the others), and is "waiting" while it waits.
    Step = Record.struct(
      :id, :name, :handler, :step_type, :state, :attempt, :max_attempts, :result, :error, :worker,
      :created_at, :dispatched_at, :started_at, :finished_at, :processed_at, :next_attempt_at, :wait,
      times: %i[created_at dispatched_at started_at finished_at processed_at next_attempt_at],
      records: { wait: StepWait }
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
