# frozen_string_literal: true

module Tasker
  # Base class of handlers written as classes. One instance, made at its first step, runs every
  # step of its name, concurrently on the worker's threads (keep per-step state in locals):
  #
  #   class Double < Tasker::Handler
  #     handles "double"
  #
  #     def call(ctx)
  #       { "value" => ctx.context.fetch("value") * 2 }
  #     end
  #   end
  class Handler
    class << self
      # Registers this class under +name+ (in Tasker.registry unless +registry+ is given).
      def handles(name, registry: Tasker.registry)
        registry.register(name, self)
      end
    end

    # Returns the step's result: anything JSON can encode (usually a Hash).
    def call(_ctx)
      raise NotImplementedError, "#{self.class} must define #call(ctx)"
    end
  end
end
