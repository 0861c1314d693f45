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
  end
end
