# frozen_string_literal: true

# A platform gem carrying the prebuilt native extension (lib/tasker/tasker_rb.so), because the
# usual route (extconf.rb with the rb_sys gem compiling at install time) needs RubyGems.org:
#
#   workers/ruby/build.sh && cd workers/ruby && gem build tasker.gemspec
#   gem install ./tasker-0.1.0-x86_64-linux.gem   # tasker-worker-ruby
require_relative "lib/tasker/version"

native = File.join(__dir__, "lib/tasker/tasker_rb.so")
raise "#{native} is missing: run workers/ruby/build.sh before gem build" unless File.exist?(native)

Gem::Specification.new do |s|
  s.name = "tasker"
  s.version = Tasker::VERSION
  s.summary = "Tasker step handlers in Ruby over the Rust worker core"
  s.description = "Write Tasker workflow step handlers in Ruby; the Rust worker core (RabbitMQ, " \
                  "acks, result publishing, timeouts, health) runs in the same process; Tasker::Client " \
                  "submits tasks and waits for them through the orchestrator's REST API."
  s.authors = ["Tasker"]
  s.license = "MIT"
  s.homepage = "https://example.invalid/tasker"
  s.required_ruby_version = ">= 3.1"
  s.platform = Gem::Platform.local
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "bin/tasker-worker-ruby", "examples/*.rb", "README.md"] + ["lib/tasker/tasker_rb.so"]
  end
  s.bindir = "bin"
  s.executables = ["tasker-worker-ruby"]
  s.require_paths = ["lib"]
end
