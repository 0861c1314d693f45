# frozen_string_literal: true

require "openssl"
require_relative "errors"

module Tasker
  class Client
    # Riding through restarts: which failures are the connection's (worth sending again), and
    # the backoff between attempts (what Client#wait retries with).
    module Retry
      # Answers of a gateway, or of a service restarting behind it: worth asking again.
      RETRIED_STATUSES = [502, 503, 504].freeze

      # Whether +error+ is the connection's and a new attempt may succeed: no answer (refused,
      # reset, dropped, timed out; not a certificate that failed to verify), or a 502, 503 or
      # 504. Never an answer of the API refusing the request (4xx).
      def self.transient?(error)
        case error
        when ConnectionError then !error.cause.is_a?(OpenSSL::SSL::SSLError)
        when ServerError then RETRIED_STATUSES.include?(error.status)
        else false
        end
      end

      # Delays between attempts: 0.1 s doubling up to 2 s, each between half and all of its
      # step (jitter, so clients cut off together do not come back together).
      class Backoff
        FIRST = 0.1
        MAX = 2.0

        def initialize
          @step = FIRST
        end

        def next
          step = @step
          @step = [step * 2, MAX].min
          step * (0.5 + (rand / 2))
        end

        def reset
          @step = FIRST
        end
      end
    end
  end
end
