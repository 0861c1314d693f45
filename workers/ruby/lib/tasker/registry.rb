# frozen_string_literal: true

module Tasker
  # Handlers by name. A handler is anything answering #call(ctx) (a block, a lambda) or a
  # Tasker::Handler subclass, instantiated for each step.
  class Registry
    def initialize
      @handlers = {}
      @mutex = Mutex.new
    end

    def register(name, callable = nil, &block)
      handler = callable || block
      raise ArgumentError, "register #{name.inspect}: give a block or an object answering #call" unless handler
      unless handler.respond_to?(:call) || (handler.is_a?(Class) && handler.method_defined?(:call))
        raise ArgumentError, "register #{name.inspect}: #{handler.inspect} does not answer #call"
      end

      name = name.to_s
      @mutex.synchronize do
        existing = @handlers[name]
        if existing && !existing.equal?(handler)
          raise ArgumentError, "a handler named #{name.inspect} is already registered (#{existing.inspect})"
        end

        @handlers[name] = handler
      end
      self
    end

    # The callable for +name+, or nil.
    def [](name)
      handler = @handlers[name]
      handler.is_a?(Class) ? ClassHandler.new(handler) : handler
    end

    def names
      @handlers.keys.sort
    end

    def include?(name)
      @handlers.key?(name)
    end

    # Calls a fresh instance per step, so instance variables never leak between steps or threads.
    ClassHandler = Struct.new(:klass) do
      def call(ctx)
        klass.new.call(ctx)
      end
    end
    private_constant :ClassHandler
  end
end
