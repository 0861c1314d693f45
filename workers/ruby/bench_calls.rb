#!/usr/bin/env ruby
# frozen_string_literal: true

# Handler calls per second through the Ruby binding, trivial handler, no RabbitMQ: a
# Tasker::BenchHost (the worker core's BatchHost, fed synthetic steps the way the core feeds it
# after a consume) stands in for the AMQP side, so this measures the hand-off alone: take_steps
# with the GVL released, JSON both ways, the Ruby handler threads, complete. BenchHost is built
# only by `build.sh --bench` (never into the gem); `build.sh` alone builds the gem's library again.
#
#   workers/ruby/build.sh --bench && ruby workers/ruby/bench_calls.rb [CALLS=50000] [CONCURRENCY=8]
#
# Two figures: "raw" is one Ruby thread looping take_steps(256) -> handler -> complete (the
# binding's floor); "worker" is Tasker::Worker with its handler threads, one step each at a time.
$LOAD_PATH.unshift(File.expand_path("lib", __dir__))
require "tasker"
abort "bench_calls.rb: build the bench library first: workers/ruby/build.sh --bench" unless defined?(Tasker::BenchHost)

calls = Integer(ARGV[0] || 50_000)
concurrency = Integer(ARGV[1] || 8)
registry = Tasker::Registry.new
registry.register("noop") { |ctx| { "value" => ctx.context["value"] } }

def measure(calls)
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  done, ok = yield
  elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  raise "only #{done}/#{calls} outcomes (#{ok} successes)" unless done == calls && ok == calls

  [elapsed, calls / elapsed]
end

# Raw: one thread, batches of up to 256.
host = Tasker::BenchHost.new(1)
runner = Tasker::Runner.new(registry)
raw = measure(calls) do
  host.submit(calls, "noop")
  taken = 0
  while taken < calls
    jobs = JSON.parse(host.take_steps(256, 1.0))
    taken += jobs.size
    host.complete("[#{jobs.map { |j| runner.call(j) }.join(",")}]")
  end
  host.wait_completed(calls, 60_000)
end
host.stop

# Worker: the full loop on a pool of `concurrency` threads (after a warm-up).
host = Tasker::BenchHost.new(concurrency)
worker = Tasker::Worker.new(templates: nil, registry: registry, native: host).start
host.submit(1_000, "noop")
host.wait_completed(1_000, 60_000)
pooled = measure(calls) do
  host.submit(calls, "noop")
  host.wait_completed(calls, 120_000)
end
worker.stop

puts format("raw:    %d calls in %.2f s = %d calls/s (one thread, batches of up to 256)", calls, *raw)
puts format("worker: %d calls in %.2f s = %d calls/s (Tasker::Worker, %d handler threads)", calls, *pooled, concurrency)
