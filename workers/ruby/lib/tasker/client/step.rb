# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # What a wait step waits for: `kind` "sleep" (a duration), "until" (a time from the task's
    # context) or "signal" (the signal named `signal`). `until` (a Time) is when it wakes up, or
    # times out waiting for its signal; `on_timeout` ("fail", "skip" or "continue") what a
    # signal wait does then.
    StepWait = Record.struct(:kind, :signal, :until, :on_timeout, times: %i[until])

    # What a child-workflow step starts: a task of the template `namespace`/`name`/`version`
    # (pinned when the parent task was created). `task_id` is that task's once it exists (nil
    # before); `on_parent_cancel` ("cancel" or "abandon") what cancelling or failing the parent
    # does to it while it runs.
    StepChild = Record.struct(:namespace, :name, :version, :task_id, :on_parent_cancel,
                              defaults: { on_parent_cancel: "cancel" })

    # Why a "throttled" step has not started yet: `kind` "concurrency" (every slot of the
    # concurrency key `key` is in use), "rate" (the rate key `key` has no token left) or "paused"
    # (the rate key `key` is paused). `limit` is that key's limit, `since` (a Time) when the step
    # began to wait, and `until` (a Time) when it may start (nil for a concurrency wait: it starts
    # when a slot frees).
    StepThrottle = Record.struct(:kind, :key, :limit, :since, :until, times: %i[since until])

    # The concurrency limit of a step (StepLimits#concurrency): at most `limit` steps of the key
    # `key` run at once. The key is resolved: "<namespace>/<template>:<value>" for a template's
    # limit, "<namespace>/<template>/<step>:<value>" for a step's own.
    StepConcurrencyLimit = Record.struct(:key, :limit)

    # The rate limit of a step (StepLimits#rate): steps of the rate key `key` (a name shared
    # cluster-wide) start at most `limit` times per `per_ms` milliseconds, `burst` at once.
    StepRateLimit = Record.struct(:key, :limit, :per_ms, :burst)

    # The limits that apply to a step (its own, else its template's), keys resolved from the
    # task's context: `concurrency` (a StepConcurrencyLimit) and `rate` (a StepRateLimit), each
    # nil when there is none.
    StepLimits = Record.struct(:concurrency, :rate,
                               records: { concurrency: StepConcurrencyLimit, rate: StepRateLimit })

    # A step with its result, error and the times of each hop (Times, nil until they happen):
    # `dispatched_at` (published to its queue), `started_at` and `finished_at` (the handler's
    # run), `processed_at` (its result applied), `next_attempt_at` (a retry waiting for its
    # backoff). `step_type` is "standard", "decision", "convergence", "batchable",
    # "batch_worker", "wait" or "child"; `error` is `{"kind", "message", "backtrace"?}` of a failed
    # attempt. A wait step (run by the orchestrator, no handler of yours) has its `wait`, a
    # StepWait (nil for the others), and is "waiting" while it waits.
    #
    # `namespace` is the queue namespace the step runs in (its own `namespace:` or its task's;
    # nil from a server that does not say). A child-workflow step (`step_type` "child", handler
    # "tasker:child") has its `child`, a StepChild (nil for the others), and is "waiting" while
    # its child task runs; its result is the child task's result. `unserved` is true while the
    # step waits for a worker and no live worker serves its namespace and handler.
    #
    # `state` is "pending", "throttled", "enqueued", "running" (a worker reported its handler
    # runs the attempt; `worker` and `started_at` say where and since when), "waiting",
    # "waiting_retry", "completed", "failed", "skipped" or "cancelled". `limits` are the concurrency and rate limits that apply
    # to the step, a StepLimits (nil for a step without any). A step ready to start but held by
    # one of them is "throttled" (not in flight, its attempt not yet counted) and its `throttle`,
    # a StepThrottle (nil otherwise), says which key holds it and until when.
    Step = Record.struct(
      :id, :name, :handler, :step_type, :state, :attempt, :max_attempts, :result, :error, :worker,
      :created_at, :dispatched_at, :started_at, :finished_at, :processed_at, :next_attempt_at, :wait,
      :namespace, :child, :unserved, :throttle, :limits,
      times: %i[created_at dispatched_at started_at finished_at processed_at next_attempt_at],
      records: { wait: StepWait, child: StepChild, throttle: StepThrottle, limits: StepLimits },
      defaults: { unserved: false }
    ) do
      # Whether it waits for a worker and no live worker serves its namespace and handler.
      def unserved?
        unserved == true
      end

      # Whether it is ready to start but held by a concurrency or rate limit (see #throttle).
      def throttled?
        state == "throttled"
      end
    end

    # One page of Client#steps_page, in step id order. `next` is the `after:` of the next page,
    # nil on the last one.
    StepPage = Struct.new(:steps, :next, keyword_init: true) do
      def self.from_json(object)
        new(steps: object.fetch("steps").map { |s| Step.from_json(s) }, next: object["next"])
      end
    end
  end
end
