# frozen_string_literal: true

module Tasker
  # Base of the errors a handler raises on purpose. The reported error kind is +kind+ when
  # given, else the exception's class name (as for any other exception).
  class Error < StandardError
    attr_reader :kind

    def initialize(message = nil, kind: nil)
      super(message)
      @kind = kind
    end
  end

  # Stops retries: the step fails at once and the task ends in `error`.
  #
  #   raise Tasker::PermanentError, "input rejected for good"
  #   raise Tasker::PermanentError.new("no such account", kind: "validation")
  class PermanentError < Error; end

  # Retried per the template's retry policy. Any other exception is retried the same way; this
  # class only lets a handler choose the reported kind.
  class RetryableError < Error; end

  # Raised by Context#parent_results and #each_parent_result when the orchestrator cannot be
  # reached to read them; the step is retried.
  class ReferenceUnavailable < RetryableError
    def kind
      "reference_unavailable"
    end
  end

  # Raised inside a handler that outlives its step's timeout, so its thread is freed. The core
  # has already failed the attempt (retryably) by then.
  class TimeoutError < Error; end
end
