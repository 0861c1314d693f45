# frozen_string_literal: true

require "json"
require "logger"

module Tasker
  class << self
    # Where the worker core's log records go (consuming, publishing results, reconnecting): a
    # Logger on $stderr unless you set your own. +RUST_LOG+ chooses what the core emits at all
    # (info by default).
    attr_writer :logger

    def logger
      @logger ||= Logger.new($stderr, progname: "tasker")
    end
  end

  # Moves the worker core's log records into Tasker.logger, on a thread of its own (Ruby may
  # only be called from Ruby threads, so the core queues them and this thread drains the queue).
  # Each record keeps its level, and names the Rust module that wrote it: "tasker_worker::worker:
  # worker consuming ...".
  module Logs
    LEVELS = {
      "ERROR" => Logger::ERROR, "WARN" => Logger::WARN, "INFO" => Logger::INFO,
      "DEBUG" => Logger::DEBUG, "TRACE" => Logger::DEBUG
    }.freeze

    @lock = Mutex.new

    # Starts the thread, once per process.
    def self.forward
      @lock.synchronize do
        @thread ||= Thread.new do
          Thread.current.name = "tasker-logs"
          loop do
            JSON.parse(NativeWorker.next_log_records(256, 0.5)).each do |r|
              Tasker.logger.add(LEVELS.fetch(r["level"], Logger::INFO), "#{r["target"]}: #{r["message"]}")
            end
          end
        end
      end
    end
  end
end
