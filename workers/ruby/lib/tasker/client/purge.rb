# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # The finished states Client#purge removes tasks of (`states:`; all three by default).
    PURGE_STATES = %w[complete error cancelled].freeze

    # What Client#purge did (or, a `dry_run`, would do): the finished tasks of `states` whose
    # completion is before `before` (a Time: now less `older_than`), `tasks` of them purged
    # (`by_state`: how many of each state), `rows` deleted in all and their `bytes` (both nil in a
    # dry run). `more` is true when the request's limit stopped it with more left: call again.
    PurgeResult = Record.struct(
      :dry_run, :older_than, :before, :states, :tasks, :by_state, :rows, :bytes, :more,
      times: %i[before],
      defaults: { by_state: {}.freeze }
    ) do
      # Whether it only counted (deleted nothing).
      def dry_run?
        dry_run == true
      end

      # Whether the limit stopped it with more to purge.
      def more?
        more == true
      end
    end

    # The retention policy the orchestrator runs, as Client#retention reads it: how long finished
    # tasks of each state are kept before an orchestrator purges them (`complete`, `error`,
    # `cancelled`) and how long a purged task's id raises TaskPurgedError (`tombstones`), each a
    # duration String as configured ("30d", "36h", "1h30m") or "never"; the purge's pace: it
    # looks every `interval_ms` milliseconds, purges `batch` tasks a transaction and spends at
    # most `busy_percent` (1–100) of its time deleting. `last_purged_at` (a Time) is when the
    # most recently purged task still remembered (its tombstone kept) was purged, by the policy
    # or by Client#purge; nil when none is.
    RetentionPolicy = Record.struct(
      :complete, :error, :cancelled, :tombstones, :interval_ms, :batch, :busy_percent, :last_purged_at,
      times: %i[last_purged_at]
    )
  end
end
