# frozen_string_literal: true

module Tasker
  # Handlers by name. A handler is anything answering #call(ctx) (a block, a lambda) or a
  # Tasker::Handler subclass, instantiated once, at its first step, and shared by every step of
  # its name (concurrently, on the worker's threads), as in every language.
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
        if @handlers.key?(name)
          raise ArgumentError, "a handler named #{name.inspect} is already registered"
        end

        @handlers[name] = handler.is_a?(Class) ? ClassHandler.new(handler) : handler
      end
      self
    end

    # The callable for +name+, or nil.
    def [](name)
      @handlers[name]
    end

    def names
      @handlers.keys.sort
    end

    def include?(name)
      @handlers.key?(name)
    end

    # Instantiates the handler classes registered (Tasker::Worker#start calls it), so that a
    # constructor's error stops the worker's start instead of failing steps. A class not
    # prepared is instantiated at its first step.
    def prepare
      @handlers.each_value { |h| h.instance if h.is_a?(ClassHandler) }
      self
    end

    # One instance of a handler class, made when the worker starts (Registry#prepare) or at its
    # first step, not at registration: `handles` runs inside the class body, before the class's
    # own #initialize is defined.
    class ClassHandler
      def initialize(klass)
        @klass = klass
        @mutex = Mutex.new
      end

      def call(ctx)
        instance.call(ctx)
      end

      def inspect
        "#<handler class #{@klass}>"
      end

      def instance
        @instance || @mutex.synchronize { @instance ||= @klass.new }
      end
    end
    private_constant :ClassHandler
  end
end
