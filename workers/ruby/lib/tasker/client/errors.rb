# frozen_string_literal: true

module Tasker
  class Client
    # Base of every error a Tasker::Client raises. Raised as itself for a client that cannot be
    # built (an unusable CA file, a URL that is not http:// or https://) and for an answer that
    # is not the API's JSON.
    class Error < StandardError; end

    # The orchestrator could not be reached or did not answer: connection refused, unknown host,
    # TLS handshake or certificate verification failed, timeout, connection dropped. #cause is
    # the exception underneath (an Errno::ECONNREFUSED, OpenSSL::SSL::SSLError,
    # Net::ReadTimeout, ...).
    class ConnectionError < Error; end

    # An error answer of the API, `{"error": {"code", "message", "details"?}}`. #message is the
    # API's message; #code its stable error code (`task_not_found`, `idempotency_key_reused`,
    # ...: match on this, never on the message); #status the HTTP status; #details the optional
    # `details` value (e.g. the schema violations of `context_schema_violation`), else nil.
    # Raised as the subclass for its status where there is one.
    class ApiError < Error
      attr_reader :status, :code, :details

      # The class of an error answer with HTTP status +status+.
      def self.for(status)
        case status
        when 400, 413, 422 then InvalidRequestError
        when 401, 403 then AuthError
        when 404 then NotFoundError
        when 409 then ConflictError
        when 410 then TaskPurgedError
        when 500..599 then ServerError
        else ApiError
        end
      end

      def initialize(status:, code:, message:, details: nil)
        super(message)
        @status = status
        @code = code
        @details = details
      end

      def inspect
        "#<#{self.class} #{status} #{code}: #{message}>"
      end
    end

    # 400, 413 or 422: the request was refused as it is (`invalid_context`, `invalid_wait`,
    # `context_schema_violation`, `unknown_template`, `invalid_result`, ...). It wrote nothing.
    class InvalidRequestError < ApiError; end

    # 401 `unauthenticated` (no valid token) or 403 `forbidden` (the token's scope does not
    # cover the call; #details has `scope` and `needed`).
    class AuthError < ApiError; end

    # 404: `task_not_found`, `step_not_found`, `schedule_not_found`, ...
    class NotFoundError < ApiError; end

    # 410 `task_purged`: the retention policy purged the task (Client#purge), its record is gone.
    # #details has its "task_id", the "state" it ended in and "purged_at". A NotFoundError, as the
    # id becomes once its tombstone expires (404 `task_not_found`).
    class TaskPurgedError < NotFoundError; end

    # 409: the task's state forbids it (`task_not_running`, `task_not_failed`,
    # `step_not_failed`, `task_finished`), `idempotency_key_reused` or `signal_conflict`.
    class ConflictError < ApiError; end

    # 5xx: `storage_unavailable` and `broker_unavailable` (503, worth retrying) or `internal`.
    class ServerError < ApiError; end
  end
end
