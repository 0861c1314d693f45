# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A concurrency key as Client#concurrency_limits lists it: `key`
    # ("<namespace>/<template>:<value>" or "<namespace>/<template>/<step>:<value>"), its `limit`,
    # the slots `in_use` (steps of the key in flight) and the steps `throttled` waiting for one.
    ConcurrencyLimit = Record.struct(:key, :limit, :in_use, :throttled, defaults: { in_use: 0, throttled: 0 })

    # A rate key as Client#rate_limits lists it (and Client#pause_rate_limit and
    # Client#resume_rate_limit return it): `limit` starts per `per_ms` milliseconds, `burst` at
    # once, and the steps `throttled` waiting for a token. `paused_until` (a Time) is the end of
    # its pause (no step of the key starts before; nil when not paused) and `pause_note` the
    # pause's note.
    RateLimit = Record.struct(
      :key, :limit, :per_ms, :burst, :paused_until, :pause_note, :throttled,
      times: %i[paused_until],
      defaults: { throttled: 0 }
    )
  end
end
