# frozen_string_literal: true

# A platform gem carrying the prebuilt native extension (lib/tasker/tasker_rb.so), because the
# usual route (extconf.rb with the rb_sys gem compiling at install time) needs RubyGems.org.
# Build it with workers/ruby/package.sh (build.sh, then `gem build`), which prints the gem's path:
#
#   workers/ruby/package.sh target/packages
#   gem install --local target/packages/tasker-0.1.0-x86_64-linux.gem
#
# The extension is compiled for this machine's CPU and C library and for one Ruby minor version
# (the one running `gem build`, which is the one build.sh compiled against), so the gem says so.
require_relative "lib/tasker/version"

native = File.join(__dir__, "lib/tasker/tasker_rb.so")
raise "#{native} is missing: run workers/ruby/build.sh before gem build" unless File.exist?(native)

Gem::Specification.new do |s|
  s.name = "tasker"
  s.version = Tasker::VERSION
  s.summary = "Tasker step handlers in Ruby over the Rust worker core, and a client of the Tasker API"
  s.description = "Write Tasker workflow step handlers in Ruby and run them with tasker-worker-ruby: " \
                  "the Rust worker core (RabbitMQ, acks, result publishing, timeouts, /health) runs " \
                  "in the same process as a native extension, prebuilt in this gem. Tasker::Client " \
                  "(require \"tasker/client\", pure Ruby) submits tasks and waits for them through the " \
                  "orchestrator's REST API."
  s.authors = ["Tasker contributors"]
  s.license = "MIT"
  s.required_ruby_version = "~> #{RbConfig::CONFIG.fetch("MAJOR")}.#{RbConfig::CONFIG.fetch("MINOR")}.0"
  s.platform = Gem::Platform.local
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "bin/tasker-worker-ruby", "examples/*.rb", "README.md"] + ["lib/tasker/tasker_rb.so"]
  end
  s.bindir = "bin"
  s.executables = ["tasker-worker-ruby"]
  s.require_paths = ["lib"]
end
