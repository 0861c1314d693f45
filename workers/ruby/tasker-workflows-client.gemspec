# frozen_string_literal: true

# tasker-workflows-client: Tasker::Client alone (`require "tasker/client"`), pure Ruby over
# net/http, for apps that submit tasks and wait for them and load no native code. The worker gem,
# tasker-workflows (tasker-workflows.gemspec), depends on this one at the same version and leaves
# these files to it. Build it with `workers/ruby/package.sh --client [DIR]` (`gem build`, nothing
# compiled).
require_relative "lib/tasker/version"

Gem::Specification.new do |s|
  s.name = "tasker-workflows-client"
  s.version = Tasker::VERSION
  s.summary = "A client of the Tasker workflow API (submit tasks, wait for them), pure Ruby"
  s.description = "Tasker::Client submits Tasker workflow tasks, waits for them, lists, cancels and " \
                  "repairs them through the orchestrator's REST API. Pure Ruby (net/http), no " \
                  "native code: step handlers need the worker gem, tasker-workflows."
  s.authors = ["Tasker contributors"]
  s.license = "MIT"
  s.required_ruby_version = ">= 3.1"
  # lib/tasker/client.rb and its parts require only each other, the standard library and
  # lib/tasker/version.rb (the User-Agent's version).
  s.files = Dir.chdir(__dir__) { ["lib/tasker/client.rb", "lib/tasker/version.rb"] + Dir["lib/tasker/client/**/*.rb"] }
  s.require_paths = ["lib"]
end
