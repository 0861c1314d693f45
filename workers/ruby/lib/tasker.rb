# frozen_string_literal: true

# Tasker step handlers in Ruby. The worker core (RabbitMQ, acks, result publishing, step
# timeouts, /health) is Rust, loaded from the native extension tasker/tasker_rb.so; this library
# is the handler API (Tasker::Handler, Tasker.register, Tasker::PermanentError) and the loop that
# runs handlers on a pool of Ruby threads (Tasker::Worker). Tasker::Client, the REST API client,
# loads on first use; `require "tasker/client"` loads it alone, without the native extension.

require "json"

begin
  require_relative "tasker/tasker_rb"
rescue LoadError => e
  raise LoadError, "the Tasker native extension is not built (#{e.message}); " \
                   "run workers/ruby/build.sh, which puts it at lib/tasker/tasker_rb.so"
end

# Through the load path, not require_relative: as gems, version.rb and tasker/client are the
# tasker-workflows-client gem's (a dependency of this one, activated with it), not in this folder.
require "tasker/version"
require_relative "tasker/errors"
require_relative "tasker/context"
require_relative "tasker/registry"
require_relative "tasker/handler"
require_relative "tasker/runner"
require_relative "tasker/watchdog"
require_relative "tasker/logs"
require_relative "tasker/worker"

module Tasker
  autoload :Client, "tasker/client"

  class << self
    # The registry the worker entry point uses. Handler files fill it when they are loaded.
    def registry
      @registry ||= Registry.new
    end

    # Registers a block (or any object answering #call(ctx)) under +name+ in Tasker.registry:
    #
    #   Tasker.register("double") { |ctx| { "value" => ctx.context["value"] * 2 } }
    def register(name, callable = nil, &block)
      registry.register(name, callable, &block)
    end
  end
end
