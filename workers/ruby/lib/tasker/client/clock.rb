# frozen_string_literal: true

module Tasker
  class Client
    # The engine's clock (`/v1/clock`), Client's calls: reading it, and in test mode
    # (`tasker-orchestrator test-env`, what Tasker::Testing::WorkflowEnv starts) moving it and
    # waiting for a task with time skipping. Answers are Hashes as the API sends them
    # ("now", "skew_ms", "test_clock", "next_timer", "busy"). Semantics follow the Rust client.
    module Clock
      # Seconds one look at the task lasts before the clock may skip.
      LOOK = 0.02

      # The engine's clock: its time, skew, next timer and whether a step is with a worker.
      def clock
        @http.get("/v1/clock")
      end

      # Test mode (admin): moves the clock forward by +by+ ("7d", "90s"); every timer then due
      # has rung when it answers. ConflictError `test_clock_off` on an orchestrator not in test
      # mode.
      def advance_clock(by)
        @http.post("/v1/clock/advance", { by: by })
      end

      # Test mode (admin): moves the clock to its next timer when no step is with a worker;
      # "skipped" says whether it moved, "clock" is the clock after.
      def skip_clock
        @http.post("/v1/clock/skip")
      end

      # Test mode: waits up to +timeout+ seconds of wall time for task +id+ to end, skipping the
      # clock to its next timer whenever no step is with a worker; the Task as it is then.
      def wait_skipping(id, timeout)
        deadline = monotonic + timeout
        loop do
          left = [deadline - monotonic, 0].max
          task = wait(id, [left, LOOK].min)
          return task if task.terminal? || left.zero?

          skip_clock
        end
      end
    end
  end
end
