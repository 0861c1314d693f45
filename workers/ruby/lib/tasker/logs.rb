# frozen_string_literal: true

require "json"
require "logger"

module Tasker
  class << self
    # Where the worker core's log records go (consuming, publishing results, reconnecting): a
    # Logger on $stderr unless you set your own. +RUST_LOG+ chooses what the core emits at all
    # (info by default). With TASKER_LOG_FORMAT=json that Logger writes one JSON object a line
    # (Logs::JsonFormatter); a logger you set keeps its own format.
    attr_writer :logger

    def logger
      @logger ||= Logger.new($stderr, progname: "tasker", formatter: (Logs::JsonFormatter.new if Logs.json?))
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

    # The variable that chooses the format: text (the default) or json.
    FORMAT_VARIABLE = "TASKER_LOG_FORMAT"

    @lock = Mutex.new

    # TASKER_LOG_FORMAT=json (any case).
    def self.json?
      ENV.fetch(FORMAT_VARIABLE, "").strip.casecmp?("json")
    end

    # Starts the thread, once per process.
    def self.forward
      @lock.synchronize do
        @thread ||= Thread.new do
          Thread.current.name = "tasker-logs"
          loop do
            JSON.parse(NativeWorker.next_log_records(256, 0.5)).each { |r| emit(r) }
          end
        end
      end
    end

    # Hands one of the core's records ({"level", "target", "message"}, and "fields" when the
    # core sends the event's fields apart from its message) to Tasker.logger, as a Record.
    def self.emit(record)
      fields = record["fields"].is_a?(Hash) ? record["fields"] : {}
      Tasker.logger.add(LEVELS.fetch(record["level"], Logger::INFO),
                        Record.new(record["level"], record["target"], record["message"], fields))
    end

    # A record of the core, as Tasker.logger receives it: to any formatter, the String
    # "tasker_worker::worker: worker consuming namespaces=..." (the fields as " key=value");
    # JsonFormatter takes it apart again.
    class Record < String
      attr_reader :level, :target, :message, :fields

      def initialize(level, target, message, fields = {})
        super("#{target}: #{message}#{fields.map { |k, v| " #{k}=#{v}" }.join}")
        @level = level
        @target = target
        @message = message
        @fields = fields
      end
    end

    # One JSON object a line, as the Rust binaries write with TASKER_LOG_FORMAT=json:
    # "timestamp" (RFC 3339, UTC, microseconds), "level" (ERROR, WARN, INFO, DEBUG, TRACE),
    # "target" (the Rust module for the core's records, else the logger's progname), "message",
    # then the record's fields at the top level: a Record's, or a Hash message's other keys
    # (Tasker.logger.info(message: "charged", order: 7)).
    class JsonFormatter
      SEVERITIES = { "FATAL" => "ERROR", "ANY" => "ERROR", "UNKNOWN" => "ERROR" }.freeze

      def call(severity, time, progname, msg)
        line = {
          "timestamp" => time.getutc.strftime("%Y-%m-%dT%H:%M:%S.%6NZ"),
          "level" => SEVERITIES.fetch(severity, severity),
          "target" => progname.to_s.empty? ? "ruby" : progname.to_s
        }
        fields(line, msg).each { |k, v| line[k.to_s] = v unless line.key?(k.to_s) }
        "#{generate(line)}\n"
      end

      private

      # Sets line's message (and a Record's level and target); returns the record's fields.
      def fields(line, msg)
        case msg
        when Record
          line.update("level" => msg.level, "target" => msg.target, "message" => msg.message)
          msg.fields
        when Hash
          line["message"] = (msg[:message] || msg["message"]).to_s
          msg.reject { |k, _| k.to_s == "message" }
        when Exception
          line["message"] = "#{msg.message} (#{msg.class})"
          { "backtrace" => msg.backtrace&.join("\n") }.compact
        else
          line["message"] = msg.is_a?(String) ? msg : msg.inspect
          {}
        end
      end

      def generate(line)
        JSON.generate(line)
      rescue JSON::GeneratorError, EncodingError
        # NaN, invalid UTF-8...: the line still goes out, every value as text.
        JSON.generate(line.transform_values { |v| v.to_s.scrub })
      end
    end
  end
end
