# tasker-workflows: a platform gem carrying the prebuilt native extension
# (lib/tasker/tasker_rb.so), because the usual route (extconf.rb with the rb_sys gem compiling at
# install time) needs RubyGems.org. The API client (lib/tasker/client.rb, lib/tasker/client/ and
# lib/tasker/version.rb) is the gem tasker-workflows-client (tasker-workflows-client.gemspec),
# which this one depends on at its own version and leaves those files to. Build both with
# workers/ruby/package.sh (build.sh, then `gem build`), which prints the gem's path:
#
#   workers/ruby/package.sh --client target/packages && workers/ruby/package.sh target/packages
#   cd target/packages && gem install --local tasker-workflows-0.1.0-x86_64-linux.gem
#
# The extension is compiled for this machine's CPU and C library and for one Ruby minor version
# (the one running `gem build`, which is the one build.sh compiled against), so the gem says so.
require_relative "lib/tasker/version"

native = File.join(__dir__, "lib/tasker/tasker_rb.so")
raise "#{native} is missing: run workers/ruby/build.sh before gem build" unless File.exist?(native)

# The client gem's files are its own, not this gem's.
client = Gem::Specification.load(File.join(__dir__, "tasker-workflows-client.gemspec"))

Gem::Specification.new do |s|
  s.name = "tasker-workflows"
  s.version = Tasker::VERSION
  s.summary = "Tasker step handlers in Ruby over the Rust worker core"
  s.description = "Write Tasker workflow step handlers in Ruby and run them with tasker-worker-ruby: " \
                  "the Rust worker core (RabbitMQ, acks, result publishing, timeouts, /health) runs " \
                  "in the same process as a native extension, prebuilt in this gem. Tasker::Client " \
                  "(require \"tasker/client\", pure Ruby) comes with the tasker-workflows-client gem."
  s.authors = ["Tasker contributors"]
  s.license = "MIT"
  s.required_ruby_version = "~> #{RbConfig::CONFIG.fetch("MAJOR")}.#{RbConfig::CONFIG.fetch("MINOR")}.0"
  s.platform = Gem::Platform.local
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "bin/tasker-worker-ruby", "examples/*.rb", "README.md"] - client.files +
      ["lib/tasker/tasker_rb.so"]
  end
  s.add_dependency client.name, client.version.to_s
  s.bindir = "bin"
  s.executables = ["tasker-worker-ruby"]
  s.require_paths = ["lib"]
end
