# frozen_string_literal: true

require "json"
require "tasker"

module Tasker
  module Testing
    # Workflow tests on the real engine with a clock the test controls (docs/testing.md):
    #
    #   Tasker::Testing::WorkflowEnv.open("templates", registry: registry) do |env|
    #     task = env.client.create_task("shop", "follow_up")
    #     assert_equal "complete", env.wait(task.id).state   # its `sleep: 7d` skipped
    #   end
    #
    # It starts `tasker-orchestrator test-env` (TASKER_ORCHESTRATOR_BIN, else
    # `tasker-orchestrator` on PATH): an orchestrator in test mode on a database and queue
    # prefix of its own, on the PostgreSQL and RabbitMQ that DATABASE_URL and AMQP_URL name. It
    # registers the templates and runs the registry's handlers in this process, as a worker
    # would. #stop stops both; the orchestrator then drops the database and the queues.
    class WorkflowEnv
      attr_reader :client, :place
      # Whether #wait skips the clock to the next timer whenever no step is with a worker.
      attr_accessor :time_skipping

      # Starts an environment, yields it and stops it.
      def self.open(templates, **options)
        env = new(templates, **options)
        begin
          yield env
        ensure
          env.stop
        end
      end

      def initialize(templates, registry: Tasker.registry, time_skipping: true)
        @time_skipping = time_skipping
        bin = ENV.fetch("TASKER_ORCHESTRATOR_BIN", "")
        bin = "tasker-orchestrator" if bin.empty?
        begin
          @io = IO.popen([bin, "test-env"], "r+")
        rescue Errno::ENOENT => e
          raise WorkerError, "cannot run #{bin}: #{e.message}; build it and put it on PATH or in TASKER_ORCHESTRATOR_BIN"
        end
        begin
          serve(templates, registry)
        rescue StandardError
          end_orchestrator
          raise
        end
      end

      # The engine's time (RFC 3339).
      def now
        @client.clock.fetch("now")
      end

      # Moves the engine's clock forward by +by+ ("7d", "90s"); due timers have rung on return.
      def advance(by)
        @client.advance_clock(by)
      end

      # Moves the engine's clock to its next timer if no step is with a worker.
      def skip
        @client.skip_clock
      end

      # Waits up to +timeout+ seconds of wall time for task +id+ to end (skipping time when
      # #time_skipping); the task as it is then.
      def wait(id, timeout = 60)
        @time_skipping ? @client.wait_skipping(id, timeout) : @client.wait(id, timeout)
      end

      # Stops the handlers, then the orchestrator (which drops the database and queues).
      # Idempotent.
      def stop
        return if @io.closed?

        @worker&.stop
        @runner&.join
        end_orchestrator
      end

      private

      def serve(templates, registry)
        line = @io.gets or raise WorkerError, "tasker-orchestrator test-env ended before serving (its error is on stderr)"
        @place = JSON.parse(line)
        @client = Tasker::Client.new(url: @place.fetch("url"))
        @worker = Tasker::Worker.start(templates: templates, registry: registry, health_port: 0,
                                       orchestrator_url: @place.fetch("url"), amqp_url: @place.fetch("amqp_url"),
                                       queue_prefix: @place.fetch("queue_prefix"), register_templates: true)
        @runner = Thread.new { @worker.run }
      end

      # Its stdin closing is what ends it; it drops the database and queues, then exits.
      def end_orchestrator
        @io.close_write
        @io.read
        @io.close
      end
    end
  end
end
