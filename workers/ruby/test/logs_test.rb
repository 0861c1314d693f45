# frozen_string_literal: true

require "test_helper"
require "open3"
require "stringio"
require "io/wait" # IO#wait_readable

# TASKER_LOG_FORMAT=json: every line the worker writes to stderr is one JSON object, the core's
# records and Ruby's own alike, as the Rust binaries write them (tests/fast/logs.rs); a logger
# you set keeps its own format.
class LogsTest < Minitest::Test
  include TestSupport

  TIMESTAMP = /\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\z/
  BIN = File.expand_path("../bin/tasker-worker-ruby", __dir__)
  HANDLERS = File.expand_path("../fixtures/handlers.rb", __dir__)
  JSON_ENV = { "TASKER_LOG_FORMAT" => "json", "RUST_LOG" => "info", "NO_COLOR" => "1",
               "TASKER_WORKER__REGISTER_TEMPLATES" => "false" }.freeze

  # Each line parsed, with the fields every line has checked.
  def json_lines(text)
    text.each_line.reject { |l| l.strip.empty? }.map do |line|
      record = JSON.parse(line)
      assert_kind_of Hash, record, line
      assert_match TIMESTAMP, record["timestamp"], line
      assert_includes %w[ERROR WARN INFO DEBUG TRACE], record["level"], line
      refute_empty record["target"].to_s, line
      assert_kind_of String, record["message"], line
      record
    rescue JSON::ParserError
      flunk "not a JSON line: #{line.inspect}"
    end
  end

  def test_the_entry_point_writes_json_lines
    Open3.popen3(JSON_ENV, RbConfig.ruby, BIN, "--templates", FIXTURE_TEMPLATES, "--handlers", HANDLERS,
                 "--health-port", "0") do |stdin, stdout, stderr, wait|
      stdin.close
      err = +""
      reader = Thread.new { stderr.each_line { |line| err << line } }
      ready = stdout.wait_readable(60) && stdout.gets
      assert_match(/\Atasker worker ready: language=ruby /, ready.to_s, err)
      deadline = monotonic + 20
      sleep 0.05 until err.include?("worker consuming") || monotonic > deadline
      assert_includes err, "worker consuming", "no 'worker consuming' line within 20 s"
      Process.kill("TERM", wait.pid)
      status = wait.join(30)&.value
      refute_nil status, "the worker did not stop within 30 s of SIGTERM"
      assert status.success?, "exit status #{status.inspect}; stderr: #{err}"
      reader.join(10)
      records = json_lines(err)
      # The core's records name their Rust module; Ruby's own lines the logger's progname.
      consuming = records.find { |r| r["message"].start_with?("worker consuming") }
      assert_equal %w[INFO tasker_worker::worker], consuming.values_at("level", "target"), err
      assert_equal %w[INFO tasker stopped], records.last.values_at("level", "target", "message")
    end
  end

  LIBRARY = <<~RUBY
    require "tasker"
    Tasker.logger = Logger.new($stderr, formatter: proc { |s, _, _, m| "\#{s} \#{m}\\n" }) if ARGV[0] == "set"
    Tasker.logger.warn(message: "order late", order: 7, late_s: 1.5)
    Tasker::Logs.emit("level" => "INFO", "target" => "tasker_worker::worker", "message" => "worker consuming")
  RUBY

  def run_library(mode)
    out, err, status = Open3.capture3({ "TASKER_LOG_FORMAT" => "JSON" }, RbConfig.ruby,
                                      "-I", File.expand_path("../lib", __dir__), "-e", LIBRARY, mode)
    assert status.success?, err
    assert_empty out
    err
  end

  def test_the_default_logger_writes_json_lines_with_their_fields
    own, core = json_lines(run_library("default"))
    assert_equal ["WARN", "tasker", "order late", 7, 1.5], own.values_at("level", "target", "message", "order", "late_s")
    assert_equal %w[INFO tasker_worker::worker worker\ consuming], core.values_at("level", "target", "message")
  end

  def test_a_logger_you_set_keeps_its_format
    own, core = run_library("set").lines(chomp: true)
    assert_match(/\AWARN \{.*order late/, own)
    assert_equal "INFO tasker_worker::worker: worker consuming", core
  end

  # Fields the core sends apart from its message: " key=value" in text, at the top level in JSON.
  def test_a_core_record_with_fields
    record = Tasker::Logs::Record.new("TRACE", "tasker_worker::worker", "took", { "count" => 3, "queue" => "q.steps" })
    assert_equal "tasker_worker::worker: took count=3 queue=q.steps", record.to_s
    io = StringIO.new
    logger = Logger.new(io, progname: "tasker", formatter: Tasker::Logs::JsonFormatter.new)
    logger.debug(record)
    line = json_lines(io.string).first
    assert_equal ["TRACE", "tasker_worker::worker", "took", 3, "q.steps"],
                 line.values_at("level", "target", "message", "count", "queue")
  end
end
