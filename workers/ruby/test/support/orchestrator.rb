# frozen_string_literal: true

require "open3"
require "socket"

module TestSupport
  # A tasker-orchestrator process (TASKER_ORCHESTRATOR_BIN, else target/debug/tasker-orchestrator,
  # which workers/ruby/test.sh builds) on a free loopback port. Its output is drained; the start
  # fails with it if the orchestrator does not say it listens.
  class Orchestrator
    START_SECONDS = 60

    def self.bin
      bin = ENV.fetch("TASKER_ORCHESTRATOR_BIN", File.join(ROOT, "target/debug/tasker-orchestrator"))
      raise "#{bin} is missing: run workers/ruby/test.sh (it builds it)" unless File.executable?(bin)

      bin
    end

    # Runs `tasker-orchestrator ARGS...` (a subcommand such as `token create`) to its end with
    # +env+; returns its standard output.
    def self.run(env, *args)
      out, err, status = Open3.capture3(env, bin, *args)
      raise "tasker-orchestrator #{args.join(" ")}: #{err}" unless status.success?

      out
    end

    # Its base URL: https:// when +env+ gives it a certificate.
    attr_reader :url

    # +env+: its configuration (DATABASE_URL, TASKER_QUEUE_PREFIX, TASKER_ORCHESTRATOR__* ...);
    # +templates+: a folder it registers at start (optional).
    def initialize(env, templates: nil)
      port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
      scheme = env.key?("TASKER_ORCHESTRATOR__TLS_CERT_FILE") ? "https" : "http"
      @url = "#{scheme}://127.0.0.1:#{port}"
      args = ["--bind", "127.0.0.1:#{port}"]
      args += ["--templates", templates.to_s] if templates
      # Tokens are required by default; the tests of tokens turn them on again in +env+.
      env = { "NO_COLOR" => "1", "RUST_LOG" => "warn,tasker_orchestrator=info",
              "TASKER_ORCHESTRATOR__AUTH" => "off" }.merge(env)
      @process = IO.popen(env, [self.class.bin, *args], err: %i[child out])
      wait_for_line("tasker-orchestrator listening")
      @drain = Thread.new { @process.each_line { |_| nil } }
    rescue StandardError
      stop
      raise
    end

    def stop
      return unless @process && !@process.closed?

      begin
        Process.kill("TERM", @process.pid)
      rescue Errno::ESRCH
        nil
      end
      Process.wait(@process.pid)
      @drain&.join
      @process.close
    end

    private

    def wait_for_line(text)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + START_SECONDS
      seen = +""
      loop do
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        raise "no #{text.inspect} from the orchestrator within #{START_SECONDS} s:\n#{seen}" if left <= 0
        next unless @process.wait_readable(left)

        line = @process.gets or raise "the orchestrator exited:\n#{seen}"
        seen << line
        return if line.include?(text)
      end
    end
  end
end
