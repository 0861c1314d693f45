# frozen_string_literal: true

module Tasker
  # A worker: the Rust core consumes the template namespaces' queues; Ruby threads run the
  # handlers. Each of `concurrency` handler threads takes one step at a time straight from the
  # core (`take_steps`, GVL released; the core wakes one waiting thread a step), runs its handler
  # and reports the outcome itself (`complete`): no thread between the core and a handler, none
  # ever blocking the core. The same three calls in every language:
  #
  #   worker = Tasker::Worker.start(templates: "templates/")
  #   worker.run # until #stop (from another thread; from a trap: Thread.new { worker.stop })
  class Worker
    # Seconds one `take_steps` waits for steps before its thread looks again. The core's
    # shutdown wakes waiting threads at once, so this only bounds how often idle threads wake.
    BATCH_WAIT = 1.0

    # Starts a worker (see #initialize for the options); returns it.
    def self.start(**options)
      new(**options).start
    end

    # The worker protocol's `start_options` as JSON text; nil values are left out (the configured
    # value holds). +handlers+: the names of the handlers registered (the core then consumes only
    # the namespaces of the steps they run; all its templates' when nil).
    def self.start_options(templates:, concurrency: nil, health_port: nil, config: nil,
                           orchestrator_url: nil, shutdown_timeout: nil, handlers: nil, **broker)
      JSON.generate({
        "templates" => templates.to_s, "config" => config&.to_s, "health_port" => health_port,
        "concurrency" => concurrency, "orchestrator_url" => orchestrator_url,
        "shutdown_timeout" => shutdown_timeout, "handlers" => handlers&.map(&:to_s),
        "amqp_url" => broker[:amqp_url], "queue_prefix" => broker[:queue_prefix],
        "register_templates" => broker[:register_templates]
      }.compact)
    end

    attr_reader :registry

    # +templates+: folder of task templates (their namespaces are consumed).
    # +concurrency+, +health_port+ (0 picks a free port), +config+ (TOML file),
    # +orchestrator_url+, +shutdown_timeout+ (seconds): nil keeps the configured value (file,
    # TASKER_* environment, defaults). +amqp_url+, +queue_prefix+ and +register_templates+ (a
    # test environment's broker and prefix; `worker.register_templates`) likewise.
    # +native+ replaces the core (e.g. a Tasker::BenchHost); by default one is started.
    def initialize(templates:, registry: Tasker.registry, concurrency: nil, health_port: nil, config: nil,
                   orchestrator_url: nil, shutdown_timeout: nil, native: nil, **broker)
      unknown = broker.keys - %i[amqp_url queue_prefix register_templates]
      raise ArgumentError, "unknown keywords: #{unknown.join(", ")}" unless unknown.empty?

      @broker = broker
      @native = native
      @templates = templates
      @registry = registry
      @concurrency = concurrency
      @health_port = health_port
      @config = config
      @orchestrator_url = orchestrator_url
      @shutdown_timeout = shutdown_timeout
      @lock = Mutex.new
      @finished = ConditionVariable.new
      @state = :new
    end

    # Starts the core and the threads; returns self. Raises Tasker::WorkerError if the core
    # cannot start (no templates, bad configuration, port taken), ArgumentError for a bad
    # option. The core is told the registry's handler names: it consumes only the namespaces of
    # the template steps whose handler is one of them (a step's own `namespace:`, else its
    # template's), so the worker takes no step it cannot run.
    def start
      @lock.synchronize do
        raise WorkerError, "the worker was already started" unless @state == :new

        @state = :starting
      end
      # Handler classes are instantiated now, so a constructor's error stops the start.
      @registry.prepare
      @native ||= NativeWorker.start(
        Worker.start_options(templates: @templates, concurrency: @concurrency, health_port: @health_port,
                             config: @config, orchestrator_url: @orchestrator_url,
                             shutdown_timeout: @shutdown_timeout, handlers: @registry.names, **@broker)
      )
      Logs.forward if @native.is_a?(NativeWorker)
      @size = @native.concurrency
      @watchdog = Watchdog.new
      runner = Runner.new(@registry, watchdog: @watchdog, native: @native)
      @pool = Array.new(@size) { |i| spawn("tasker-handler-#{i}") { work(runner) } }
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
      end
      # The core takes no more steps from now on (waiting handler threads return at once), and
      # its shutdown timeout starts with ours.
      @native.shutdown if @native.respond_to?(:shutdown)
      grace ||= @native.respond_to?(:shutdown_timeout) ? @native.shutdown_timeout : 30
      deadline = monotonic + grace
      # Running handlers report their outcomes themselves; one still running after the grace
      # period is left (its step was not acked and runs again).
      @pool.each { |t| t.join([deadline - monotonic, 0].max) }
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
        Tasker.logger.error("#{name} failed: #{e.class}: #{e.message}\n#{e.backtrace&.join("\n")}")
        Thread.new { stop }
      end
    end

    def work(runner)
      # A timeout interrupt may only land inside a handler (see Watchdog#guard).
      Thread.handle_interrupt(TimeoutError => :never) do
        while taking?
          json = @native.take_steps(1, BATCH_WAIT)
          next if json == "[]"

          JSON.parse(json).each { |job| report(runner.call(job)) }
        end
      end
    end

    # Threads take steps from their start (the worker is still :starting) until #stop.
    def taking?
      %i[starting running].include?(@state)
    end

    def report(outcome)
      @native.complete("[#{outcome}]")
    rescue StandardError => e
      # The core has stopped (the handler outlived the grace period): the step was not acked
      # and will run again.
      Tasker.logger.warn("could not report an outcome: #{e.class}: #{e.message}")
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
