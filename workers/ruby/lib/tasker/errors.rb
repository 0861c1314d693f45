# frozen_string_literal: true

module Tasker
  # Base of the errors a handler raises on purpose. The reported error kind is +kind+ when
  # given, else the exception's class name without its modules (as for any other exception:
  # +RuntimeError+, +PermanentError+, your +InvalidOrder+).
  class Error < StandardError
    def initialize(message = nil, kind: nil)
      super(message)
      @kind = kind
    end

    def kind
      @kind || self.class.name.to_s.split("::").last
    end
  end

  # Stops retries: the step fails at once and the task ends in `error`.
  #
  #   raise Tasker::PermanentError, "input rejected for good"
  #   raise Tasker::PermanentError.new("no such account", kind: "validation")
  class PermanentError < Error; end

  # Raised by StepContext#emit and #emit_text when a chunk is not taken. Its kind:
  # +invalid_stream_chunk+ (a topic of 1 to 100 characters, at most 256 KiB, JSON data; the
  # stream goes on), +stream_too_large+ (the attempt streamed worker.max_stream_bytes: the step
  # fails with it whatever the handler does), +stream_closed+ (the attempt ended). Left to
  # propagate, it fails the step permanently with that kind.
  class StreamError < PermanentError; end

  # Retried per the template's retry policy, like any other exception; this class lets a
  # handler name the failure's kind and, when it knows better than the template's backoff (a
  # rate limit's Retry-After), when the next attempt runs: +retry_after+ in seconds, at most a
  # day.
  #
  #   raise Tasker::RetryableError.new("429 from the payment API", kind: "rate_limited", retry_after: 30)
  class RetryableError < Error
    attr_reader :retry_after

    def initialize(message = nil, kind: nil, retry_after: nil)
      if !retry_after.nil? && !(retry_after.is_a?(Numeric) && retry_after >= 0)
        raise ArgumentError, "retry_after must be a number of seconds, at least 0, not #{retry_after.inspect}"
      end

      super(message, kind: kind)
      @retry_after = retry_after
    end
  end

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
