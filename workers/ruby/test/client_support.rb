# frozen_string_literal: true

# What the client tests share (required by them, not run on its own): the test helper, a cluster
# of a real orchestrator, TLS material, the fixture templates' handlers, and ClientWire: a
# stand-in for the API (no orchestrator) and the answers its wire tests serve.

require "test_helper"
require "support/cluster"
require "support/tls"
require "net/http"
require "open3"
require "rbconfig"
require_relative "../fixtures/handlers"

# Records as the API answers them, and a stand-in that answers them, for the wire tests: the
# paths, methods and bodies of the contract, and the records read from its answers.
module ClientWire
  TASK_ID = "019a0000-0000-7000-8000-000000000001"
  CREATED = { "created_at" => "2026-11-26T09:00:00.123456Z" }.freeze
  TASK = {
    "id" => TASK_ID, "namespace" => "ruby_examples", "name" => "linear", "version" => "1.0.0", "state" => "scheduled",
    "context" => { "value" => 6 }, "idempotency_key" => nil, "open_steps" => 4, "result" => nil, "error" => nil,
    "completed_at" => nil, "duration_ms" => nil, "run_at" => "2026-11-27T02:30:00Z", "some_later_field" => 1, **CREATED
  }.freeze
  WAIT_STEP = {
    "id" => "019a0000-0000-7000-8000-000000000002", "name" => "approval", "handler" => "tasker:wait",
    "step_type" => "wait", "state" => "waiting", "attempt" => 1, "max_attempts" => 1, **CREATED,
    "wait" => { "kind" => "signal", "signal" => "approved", "until" => "2026-12-03T09:00:00Z", "on_timeout" => "fail" }
  }.freeze
  SIGNAL = {
    "task_id" => TASK_ID, "name" => "approved", "signal_id" => "approval-1", "payload" => { "approved_by" => "ops" },
    "received_at" => "2026-11-26T09:00:01Z", "consumed_by" => nil, "consumed_at" => nil
  }.freeze
  SCHEDULE = {
    "namespace" => "ruby_examples", "name" => "nightly report", "template" => "linear", "version" => nil,
    "cron" => "30 2 * * *", "timezone" => "Europe/Berlin", "context" => { "value" => 6 }, "overlap" => "skip",
    "catch_up" => "1h", "paused" => false, "note" => nil, "next_fire_at" => "2026-11-27T01:30:00Z",
    "last_fire_at" => nil, "last_task_id" => nil, "fires" => 0, "skipped" => 0,
    "updated_at" => "2026-11-26T09:00:00Z", **CREATED
  }.freeze

  # An HTTP/1.1 server on a free port answering each "METHOD /path" of +answers+ with
  # [status, JSON or nil], or a list of them in turn (the last one again once the others are
  # used); #requests holds [method, path with query, parsed body or nil].
  class StandIn
    attr_reader :requests, :url

    def initialize(answers)
      @answers = answers
      @requests = []
      @server = TCPServer.new("127.0.0.1", 0)
      @url = "http://127.0.0.1:#{@server.addr[1]}"
      @thread = Thread.new { loop { serve(@server.accept) } }
    end

    def stop
      @thread.kill
      @server.close
    end

    private

    def serve(socket)
      Thread.new do
        while (line = socket.gets)
          method, target = line.split
          headers = {}
          while (header = socket.gets) && header != "\r\n"
            key, value = header.split(":", 2)
            headers[key.downcase] = value.strip
          end
          length = headers.fetch("content-length", "0").to_i
          body = length.zero? ? nil : JSON.parse(socket.read(length))
          @requests << [method, target, body]
          found = @answers.fetch("#{method} #{target.split("?").first}") do
            [404, { "error" => { "code" => "no_route", "message" => target } }]
          end
          found = found.size > 1 ? found.shift : found.first if found.first.is_a?(Array)
          status, answer = found
          data = answer.nil? ? "" : JSON.generate(answer)
          socket.write("HTTP/1.1 #{status} X\r\ncontent-type: application/json\r\n" \
                       "content-length: #{data.bytesize}\r\n\r\n#{data}")
        end
      ensure
        socket.close
      end
    end
  end
end
