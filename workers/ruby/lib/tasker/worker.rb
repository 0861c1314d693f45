# frozen_string_literal: true

module Tasker
  # A worker: the Rust core consumes the template namespaces' queues; Ruby threads run the
  # handlers. Three kinds of Ruby thread, none ever blocking the core:
  #
  # - the dispatcher takes batches from the core (`next_batch`, GVL released) of at most as many
  #   steps as there are free pool threads, and queues them for the pool;
  # - the pool (`concurrency` threads) runs handlers, one step each at a time;
  # - the reporter hands finished outcomes back to the core, all those that finished together
  #   in one `complete_json` call.
  #
  #   worker = Tasker::Worker.new(templates: "templates/").start
  #   worker.run # until #stop (from another thread or a signal handler)
  class Worker
    # How long one `next_batch` waits for steps. Bounds how late the dispatcher notices #stop.
    BATCH_WAIT_MS = 200

    attr_reader :registry

    # +templates+: folder of task templates (their namespaces are consumed).
    # +concurrency+, +health_port+ (0 picks a free port), +config+ (TOML file),
    # +orchestrator_url+, +shutdown_timeout+ (seconds): nil keeps the configured value (file,
    # TASKER_* environment, defaults).
    # +native+ replaces the core (e.g. a Tasker::BenchHost); by default one is started.
    def initialize(templates:, registry: Tasker.registry, concurrency: nil, health_port: nil, config: nil,
                   orchestrator_url: nil, shutdown_timeout: nil, native: nil)
      @native = native
      @templates = templates
      @registry = registry
      @concurrency = concurrency
      @health_port = health_port
      @config = config
      @orchestrator_url = orchestrator_url
      @shutdown_timeout = shutdown_timeout
      @lock = Mutex.new
      @slot_freed = ConditionVariable.new
      @finished = ConditionVariable.new
      @in_flight = 0
      @state = :new
    end

    # Starts the core and the threads; returns self. Raises Tasker::WorkerError if the core
    # cannot start (no templates, bad configuration, port taken).
    def start
      @lock.synchronize do
        raise WorkerError, "the worker was already started" unless @state == :new

        @state = :starting
      end
      @native ||= NativeWorker.start(@templates.to_s, @config&.to_s, @health_port, @concurrency,
                                     @orchestrator_url, @shutdown_timeout&.to_f)
      Logs.forward if @native.is_a?(NativeWorker)
      @size = @native.concurrency
      @jobs = Thread::Queue.new
      @done = Thread::Queue.new
      @watchdog = Watchdog.new
      pages = @native if @native.respond_to?(:parent_results_page)
      runner = Runner.new(@registry, watchdog: @watchdog, pages: pages)
      @pool = Array.new(@size) { |i| spawn("tasker-handler-#{i}") { work(runner) } }
      @reporter = spawn("tasker-reporter") { report }
      @dispatcher = spawn("tasker-dispatcher") { dispatch }
      @lock.synchronize { @state = :running }
      self
    end

    def health_addr
      @native.health_addr
    end

    def namespaces
      @native.namespaces
    end

    # Handler threads: the steps run at once.
    def concurrency
      @size
    end

    # Blocks until the worker has stopped (see #stop).
    def run
      @lock.synchronize { @finished.wait(@lock) until @state == :stopped }
      raise @error if @error

      self
    end

    # Stops taking steps, lets the running handlers finish (up to +grace+ seconds, by default
    # the core's shutdown timeout: `worker.shutdown_timeout_ms`, `--shutdown-timeout`; step
    # timeouts bound them anyway), reports their outcomes, which the core publishes, then shuts
    # the core down. Steps not reported by then go back to their queues. Idempotent; not
    # callable from a trap handler (use `Thread.new { worker.stop }` there).
    def stop(grace: nil)
      @lock.synchronize do
        case @state
        when :new then return self
        when :stopping, :stopped
          @finished.wait(@lock) until @state == :stopped
          return self
        end
        @state = :stopping
        @slot_freed.broadcast
      end
      # The core takes no more steps from now on, and its shutdown timeout starts with ours.
      @native.shutdown if @native.respond_to?(:shutdown)
      grace ||= @native.respond_to?(:shutdown_timeout) ? @native.shutdown_timeout : 30
      deadline = monotonic + grace
      @dispatcher.join
      @jobs.close
      @pool.each { |t| t.join([deadline - monotonic, 0].max) }
      @done.close
      @reporter.join
      @native.stop
      @watchdog.stop
      @lock.synchronize do
        @state = :stopped
        @finished.broadcast
      end
      self
    end

    private

    def spawn(name, &block)
      Thread.new do
        Thread.current.name = name
        block.call
      rescue Exception => e # rubocop:disable Lint/RescueException
        # A bug in the loop itself, never a handler's error (those become outcomes): stop
        # loudly rather than hang.
        @error ||= e
        warn "tasker: #{name} failed: #{e.class}: #{e.message}\n#{e.backtrace&.join("\n")}"
        Thread.new { stop }
      end
    end

    def dispatch
      loop do
        free = @lock.synchronize do
          @slot_freed.wait(@lock) while @state == :running && @in_flight >= @size
          break 0 unless @state == :running

          @size - @in_flight
        end
        break if free.zero?

        json = @native.next_batch_json(free, BATCH_WAIT_MS)
        next if json == "[]"

        jobs = JSON.parse(json)
        @lock.synchronize { @in_flight += jobs.size }
        jobs.each { |job| @jobs << job }
      end
    end

    def work(runner)
      # A timeout interrupt may only land inside a handler (see Watchdog#guard).
      Thread.handle_interrupt(TimeoutError => :never) do
        while (job = @jobs.pop)
          outcome = runner.call(job)
          begin
            @done << outcome
          rescue ClosedQueueError
            # Finished after #stop's grace period: the core no longer takes it; the step was
            # not acked and will run again.
            break
          end
          @lock.synchronize do
            @in_flight -= 1
            @slot_freed.signal
          end
        end
      end
    end

    def report
      while (first = @done.pop)
        batch = [first]
        # The reporter is the only consumer, so a non-empty queue cannot run dry under it.
        batch << @done.pop(true) until @done.empty?
        begin
          @native.complete_json("[#{batch.join(",")}]")
        rescue StandardError => e
          # The core is stopping: these steps were not acked and will run again.
          warn "tasker: could not report #{batch.size} outcome(s): #{e.class}: #{e.message}"
        end
      end
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
