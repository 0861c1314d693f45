# frozen_string_literal: true

module Tasker
  # Interrupts handlers that outlive their step's timeout (Thread#raise of Tasker::TimeoutError),
  # so a stuck handler gives its thread back to the pool. The core fails such an attempt on its
  # own at the same deadline; this only frees the Ruby thread. One thread waits for the nearest
  # deadline; it is woken only when a job's deadline is nearer than that.
  class Watchdog
    def initialize
      @mutex = Mutex.new
      @changed = ConditionVariable.new
      @deadlines = {} # Thread => [deadline (monotonic seconds), timeout (seconds)]
      @next_wake = nil
      @stopped = false
      @thread = Thread.new { watch }
      @thread.name = "tasker-watchdog"
    end

    # Runs the block; raises Tasker::TimeoutError in it if it runs past +timeout+ seconds.
    # Must be called with Tasker::TimeoutError deferred (Thread.handle_interrupt ... => :never),
    # as the worker's pool threads do, so the interrupt can only land inside the block.
    def guard(timeout)
      thread = Thread.current
      arm(thread, timeout)
      begin
        Thread.handle_interrupt(TimeoutError => :immediate) { yield }
      ensure
        disarm(thread)
        # The deadline may have passed between the block's end and disarm: drop that interrupt
        # so it never lands in the next job.
        if Thread.pending_interrupt?(TimeoutError)
          begin
            Thread.handle_interrupt(TimeoutError => :immediate) { Thread.pass }
          rescue TimeoutError
            nil
          end
        end
      end
    end

    def stop
      @mutex.synchronize do
        @stopped = true
        @changed.signal
      end
      @thread.join
    end

    private

    def arm(thread, timeout)
      deadline = monotonic + timeout
      @mutex.synchronize do
        @deadlines[thread] = [deadline, timeout]
        @changed.signal if @next_wake.nil? || deadline < @next_wake
      end
    end

    def disarm(thread)
      @mutex.synchronize { @deadlines.delete(thread) }
    end

    def watch
      @mutex.synchronize do
        until @stopped
          now = monotonic
          @deadlines.select { |_, (deadline, _)| deadline <= now }.each do |thread, (_, timeout)|
            @deadlines.delete(thread)
            thread.raise(TimeoutError.new("handler did not finish within #{(timeout * 1000).round} ms", kind: "timeout"))
          end
          @next_wake = @deadlines.values.map(&:first).min
          @changed.wait(@mutex, @next_wake && [@next_wake - now, 0.001].max)
        end
      end
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
