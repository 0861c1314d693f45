# frozen_string_literal: true

require "tasker"
require_relative "workflow_env"

module Tasker
  # Handler tests without servers (docs/testing.md), and workflow tests with a skipping clock
  # (WorkflowEnv, lib/tasker/workflow_env.rb):
  #
  #   require "tasker/testing"
  #
  #   out = Tasker::Testing.run_handler("route_by_size", template: "templates/conditional.yaml",
  #                                     step: "route", parent_results: { "check" => { "value" => 7 } })
  #   assert out.success?
  #   assert_equal ["small"], out.branches
  #
  # run_handler builds the step context a worker would hand the handler — a context, parent
  # results, the attempt and (for a batch worker) its batch, or all of a template's step — runs
  # the handler as the worker runs it (interrupted at the step's timeout) and returns its Outcome
  # as the engine reads it: the worker core judges it (a result that is not JSON or too large, a
  # decision naming a branch it does not have, a batchable step without its batches all fail as
  # in production) and says whether the engine would retry it. No server is involved.
  module Testing
    # An attempt's outcome as the engine reads it. +status+ is "success" or "failure"; a
    # success has its +result+ (a decision's chosen +branches+, a batchable step's +batches+); a
    # failure its error's +kind+, +message+ and +backtrace+, +retryable+ as raised and +retried+
    # when the engine runs another attempt (after +retry_in+ seconds). +emitted+: what the
    # handler streamed, as [topic, data or text] pairs.
    Outcome = Struct.new(:status, :result, :branches, :batches, :retryable, :retried, :kind,
                         :message, :backtrace, :retry_in, :emitted, keyword_init: true) do
      def success?
        status == "success"
      end
    end

    # Stands in for the NativeWorker of one job: answers heartbeat within the step's timeout and
    # keeps what the handler streams.
    class LocalStep
      attr_reader :emitted

      def initialize(timeout)
        @until = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        @emitted = []
      end

      def heartbeat(_job)
        Process.clock_gettime(Process::CLOCK_MONOTONIC) < @until
      end

      def emit(_job, topic, payload, text)
        @emitted << [topic, text ? payload : JSON.parse(payload)]
        nil
      end
    end
    private_constant :LocalStep

    SPEC_KEYS = %i[context parent_results input max_attempts template step step_type branches timeout
                   task_id step_id].freeze
    private_constant :SPEC_KEYS

    module_function

    # Runs +handler+ — a registered name, a block or lambda, an object answering #call(ctx) or a
    # Tasker::Handler class — on one attempt of a step and returns its Outcome. With +template:+
    # and +step:+ the step's handler, type, branches, retry policy and timeout are the
    # template's. A step the core cannot make raises ArgumentError.
    def run_handler(handler = nil, attempt: 1, registry: Tasker.registry, **options, &block)
      unknown = options.keys - SPEC_KEYS
      raise ArgumentError, "run_handler: unknown options #{unknown.inspect}" unless unknown.empty?

      handler ||= block
      callable, name = resolve(handler, registry, options[:template])
      spec = { "attempt" => attempt }
      spec["handler"] = name if name
      options.each { |key, value| spec[key.to_s] = value.respond_to?(:to_path) ? value.to_path : value unless value.nil? }
      run_spec(JSON.generate(spec), callable, registry)
    end

    # A recorded attempt run again by the local handler: its +outcome+ now, the +inputs+ as the
    # API gave them, and +recorded+, the error the step's latest attempt failed with (nil if
    # that attempt did not fail or another one was replayed).
    Replayed = Struct.new(:outcome, :inputs, :recorded, keyword_init: true) do
      # Whether the handler failed again with the recorded error's kind (nil: nothing recorded).
      def reproduced?
        return nil if recorded.nil?

        !outcome.success? && outcome.kind == recorded["kind"]
      end
    end

    # Fetches one attempt of +step+ of task +task_id+ as its handler received it (the latest
    # unless +attempt+; +client+ a Tasker::Client, else one from TASKER_URL/TASKER_TOKEN) and
    # runs the local handler of its name on exactly those inputs.
    def replay(task_id, step, attempt: nil, client: nil, registry: Tasker.registry)
      client ||= Tasker::Client.new
      replay_inputs(client.step_inputs(task_id, step, attempt: attempt), registry: registry)
    end

    # Runs the local handler on inputs fetched before (Client#step_inputs, or the file
    # `tasker replay --save` writes, parsed).
    def replay_inputs(inputs, registry: Tasker.registry)
      text = JSON.generate({ "inputs" => inputs })
      out = run_spec(text, nil, registry)
      latest = inputs["attempt"] == inputs["latest_attempt"]
      Replayed.new(outcome: out, inputs: inputs, recorded: latest ? inputs["error"] : nil)
    end

    # `ruby -rtasker/testing -e 'exit Tasker::Testing.main' -- --handlers handlers.rb [INPUTS]`:
    # runs the handler of a step's recorded attempt on its inputs (INPUTS, else the file
    # TASKER_REPLAY names: `tasker replay TASK STEP -- ruby -rtasker/testing -e …`) and prints
    # its outcome next to the recorded one. Returns the exit status: 0 when they agree (or
    # nothing was recorded), 1 when they differ, 2 for bad arguments.
    def main(argv = ARGV, out: $stdout)
      args = argv.reject { |a| a == "--" }
      handlers = []
      while (i = args.index("--handlers"))
        handlers << args[i + 1]
        args.slice!(i, 2)
      end
      file = args.first || ENV.fetch("TASKER_REPLAY", nil)
      unless file
        warn "name the inputs file (tasker replay TASK STEP --save FILE) or set TASKER_REPLAY"
        return 2
      end
      require "tasker/cli"
      Tasker::CLI.load_handlers(handlers.compact)
      report(replay_inputs(JSON.parse(File.read(file))), out)
    end

    def report(replayed, out)
      o = replayed.outcome
      step = "#{replayed.inputs['step_name']} (attempt #{replayed.inputs['attempt']})"
      if o.success?
        out.puts "#{step}: succeeded with #{JSON.generate(o.result)}"
      else
        out.puts "#{step}: failed with #{o.kind}: #{o.message}"
        out.puts o.backtrace if o.backtrace && !o.backtrace.empty?
      end
      return 0 if replayed.recorded.nil?

      verdict = replayed.reproduced? ? "reproduced" : "differs"
      out.puts "recorded: #{replayed.recorded['kind']}: #{replayed.recorded['message']} — #{verdict}"
      replayed.reproduced? ? 0 : 1
    end

    # [the callable or nil (a name to look up), the handler name to give the core or nil]
    def resolve(handler, registry, template)
      case handler
      when String, Symbol then [registry[handler.to_s], handler.to_s]
      when Class then [handler, template ? nil : handler.name]
      when nil then raise ArgumentError, "run_handler: give a handler name, a callable or a block"
      else
        raise ArgumentError, "run_handler: #{handler.inspect} does not answer #call" unless handler.respond_to?(:call)

        [handler, template ? nil : "handler"]
      end
    end

    # Runs +callable+ (nil: the step's handler in +registry+) on the test step given as JSON
    # +text+, judged by the core.
    def run_spec(text, callable, registry)
      job = JSON.parse(NativeWorker.test_job(text))
      callable ||= registry[job["handler"]]
      local = LocalStep.new(job["timeout_ms"] / 1000.0)
      handlers = Registry.new
      handlers.register(job["handler"], callable) if callable
      encoded = Thread.handle_interrupt(TimeoutError => :never) do
        Runner.new(handlers, watchdog: watchdog, native: local).call(job)
      end
      outcome(JSON.parse(NativeWorker.test_judge(text, encoded)), local.emitted)
    end

    def outcome(judged, emitted)
      error = judged["error"] || {}
      Outcome.new(
        status: judged["status"], result: judged["result"], branches: judged["branches"],
        batches: judged["batches"], retryable: judged.fetch("retryable", false),
        retried: judged.fetch("retried", false), kind: error["kind"], message: error["message"],
        backtrace: error["backtrace"], retry_in: judged["retry_in"], emitted: emitted
      )
    end

    # One watchdog for every test of the process (a thread that interrupts handlers at their
    # timeout, as under a worker).
    def watchdog
      @watchdog ||= Watchdog.new
    end
  end
end
