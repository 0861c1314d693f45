# frozen_string_literal: true

# One step through the Ruby worker's runner, as `cargo bench --bench step_path` times it.
#
# argv: the job's JSON text (what the core hands out), then pauses in milliseconds. For each
# pause, prints `pause_ms p50_us p95_us`: from the job's JSON text to the outcome message handed
# to `complete`, through Tasker::Runner (parse, context, watchdog, handler, encoded
# outcome) as a handler thread runs it, sampled after that pause (0: back to back).

root = File.expand_path("../..", __dir__)
$LOAD_PATH.unshift File.join(root, "workers/ruby/lib")
require "json"
require "tasker"
require File.join(root, "workers/ruby/fixtures/handlers")

raw = "[#{ARGV[0]}]"
pauses = ARGV[1..].map(&:to_f)
watchdog = Tasker::Watchdog.new
runner = Tasker::Runner.new(Tasker.registry, watchdog: watchdog)
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
Thread.handle_interrupt(Tasker::TimeoutError => :never) do
  pauses.each do |pause|
    samples = Array.new(pause.zero? ? 2000 : 100) do
      sleep(pause / 1000.0) unless pause.zero?
      start = clock.call
      message = JSON.parse(raw).map { |job| runner.call(job) }
      report = "[#{message.join(",")}]"
      elapsed = (clock.call - start) * 1e6
      raise "unexpected outcome #{report}" unless report.include?('"status":"success"')

      elapsed
    end.sort
    puts "#{pause} #{samples[samples.size / 2]} #{samples[samples.size * 95 / 100]}"
    $stdout.flush
  end
end
watchdog.stop
