# frozen_string_literal: true

require "time"

module Tasker
  # Runs one job (a Hash parsed from the core's JSON: the worker protocol's `job`) and returns
  # its outcome (the protocol's `outcome`), already encoded as JSON so one bad result can never
  # spoil the batch it is reported in.
  class Runner
    # +native+ is the NativeWorker that hands the jobs out: it reads parent results carried by
    # reference and answers StepContext#heartbeat.
    def initialize(registry, watchdog: nil, native: nil)
      @registry = registry
      @watchdog = watchdog
      @native = native
    end

    def call(job)
      id = job.fetch("id")
      started_at = now
      outcome = run(job)
      outcome["id"] = id
      outcome["started_at"] = started_at
      outcome["finished_at"] = now
      encode(outcome)
    end

    private

    def run(job)
      handler = @registry[job["handler"]]
      return unknown_handler(job["handler"]) unless handler

      ctx = StepContext.new(job, @native)
      result = if @watchdog
                 @watchdog.guard(ctx.timeout) { handler.call(ctx) }
               else
                 handler.call(ctx)
               end
      { "status" => "success", "result" => result }
    # Everything a handler raises fails the step, never the worker: a handler that calls `exit`
    # or overflows the stack has its step failed (retryably) like any other error.
    rescue Exception => e # rubocop:disable Lint/RescueException
      failure(e)
    end

    # The error's +kind+ (a Tasker::Error), else its class name without modules; a
    # RetryableError's +retry_after+ as the next attempt's delay.
    def failure(error)
      kind = (error.kind if error.is_a?(Tasker::Error)) || error.class.name.to_s.split("::").last
      outcome = {
        "status" => "failure",
        "retryable" => !error.is_a?(PermanentError),
        "error" => {
          "kind" => kind.to_s.empty? ? error.class.inspect : kind,
          "message" => error.message.to_s,
          "backtrace" => (error.backtrace || []).join("\n"),
        },
      }
      if error.is_a?(RetryableError) && error.retry_after
        outcome["retry_after_ms"] = (error.retry_after * 1000).round
      end
      outcome
    end

    def unknown_handler(name)
      {
        "status" => "failure",
        "retryable" => false,
        "error" => {
          "kind" => "unknown_handler",
          "message" => "no handler named #{name.inspect} is registered in this worker",
        },
      }
    end

    def encode(outcome)
      JSON.generate(outcome)
    rescue StandardError => e
      # NaN, invalid UTF-8, ...: the same result would fail again, so no retry.
      outcome.delete("result")
      outcome.merge!(
        "status" => "failure",
        "retryable" => false,
        "error" => { "kind" => "invalid_result", "message" => "the result is not JSON: #{e.class}: #{e.message}" },
      )
      JSON.generate(outcome)
    end

    # Seconds since the epoch, as the core takes them: cheaper on the handler's thread than
    # formatting a date.
    def now
      Process.clock_gettime(Process::CLOCK_REALTIME, :float_second)
    end
  end
end
