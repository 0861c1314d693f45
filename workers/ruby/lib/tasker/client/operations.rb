# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # What an operation by filter does to each task (retry, resolve, cancel) or dead letter
    # (replay, discard) it matched (Client#start_operation's +action+).
    OPERATION_ACTIONS = %w[retry resolve cancel replay discard].freeze

    # Where an operation stands: "running" until it has finished, then one of the others.
    OPERATION_STATES = %w[running complete cancelled failed].freeze

    # Which tasks (or dead letters) an operation acts on, as the API gives it back
    # (Operation#filter): every field given must match, nil when not given. `namespace`, `name`
    # and `version` (the template's), `state`, `step` (the step that failed the task),
    # `error_kind`, `created_after` and `created_before` (Times), `context` (tasks whose context
    # contains it), `ids`; for dead letters `namespace`, `queue` (the one it came from), `reason`
    # (a prefix of its reason), `created_after` and `created_before` (when it was first seen),
    # `dead_letters` (their ids). Client#start_operation takes it again (to act on the same tasks
    # or dead letters), or a Hash of its fields.
    OperationFilter = Record.struct(
      :namespace, :name, :version, :state, :step, :error_kind, :created_after, :created_before, :context, :ids,
      :queue, :reason, :dead_letters,
      times: %i[created_after created_before]
    )

    # An operation by filter and its progress (Client#start_operation, #operation): of its
    # `matched` tasks (or dead letters, for replay and discard), `acted` were acted on and
    # `skipped` left (no longer in a state the action takes, purged, or outside the token's
    # namespaces; a dead letter that may never be replayed); the rest are still to come. `state`
    # is one of OPERATION_STATES; `note` says why it failed, or who cancelled it. `filter` is the
    # OperationFilter as applied (the action's states filled in). `created_at`, `updated_at` and
    # `finished_at` (nil while running) are Times.
    Operation = Record.struct(
      :id, :action, :filter, :reason, :by, :state, :matched, :acted, :skipped, :note,
      :created_at, :updated_at, :finished_at,
      times: %i[created_at updated_at finished_at],
      records: { filter: OperationFilter }
    ) do
      # Whether it has ended (complete, cancelled or failed).
      def finished?
        state != "running"
      end
    end

    # What Client#count_operation found, acting on none: the exact count `matched`, a `sample` of
    # up to 10 task ids (newest first; empty for dead letters), a `dead_letter_sample` of up to 10
    # dead letter ids (newest first; replay and discard, else empty) and the OperationFilter as it
    # would be applied.
    OperationCount = Record.struct(
      :action, :filter, :matched, :sample, :dead_letter_sample,
      records: { filter: OperationFilter }, defaults: { dead_letter_sample: [].freeze }
    )

    # One page of Client#operations, newest first. `next_before` is the `before:` of the next
    # page, nil on the last one.
    OperationList = Struct.new(:operations, :next_before, keyword_init: true) do
      def self.from_json(object)
        new(operations: object.fetch("operations").map { |o| Operation.from_json(o) },
            next_before: object["next_before"])
      end
    end

    # Operations by filter (`/v1/operations`), Client's calls: retry, resolve or cancel every
    # task a filter matches, or replay or discard every dead letter one matches, and follow the
    # operation's progress. Semantics follow the Rust client (tasker-client/src/operations.rs).
    module Operations
      # Seconds between the readings of #wait_operation.
      POLL = 0.25

      # Starts an operation on every task +filter+ matches in the namespaces the token covers
      # (`POST /v1/operations`) and returns it, "running", with the exact count `matched`; the
      # tasks are acted on in the background, each once (follow it with #wait_operation).
      # +action+: "retry" (a task in error: its failed step runs again), "resolve" (its failed
      # step is completed with +result+, any JSON but nil) or "cancel" (a running or scheduled
      # task). +filter+: a Hash (string or symbol keys; nils left out) of `namespace`, `name`,
      # `version`, `state`, `step`, `error_kind`, `created_after` and `created_before` (Times or
      # RFC 3339 Strings), `context`, `ids` (at most 10,000), or an operation's OperationFilter;
      # empty, every task of the states the action acts on (retry and resolve: error; cancel:
      # running and scheduled). +reason+ and +by+ are recorded in each task's history, with the
      # operation's id.
      #
      # +action+ "replay" (a dead letter goes back to the queue it came from) or "discard" (it is
      # deleted), with an admin token, acts on dead letters instead: +filter+ of `namespace`,
      # `queue`, `reason` (a prefix of the dead letter's reason: `result_mismatch`, ...),
      # `created_after` and `created_before` (when it was first seen), `dead_letters` (their ids,
      # at most 10,000); `matched`, `acted` and `skipped` count dead letters.
      #
      # InvalidRequestError `invalid_action`, `invalid_filter` (also a field of the other kind:
      # `queue` for a retry, `step` for a replay, ...), `missing_result`, `invalid_result` (400)
      # or `too_many_tasks` (422: over the server's `operations.max_tasks`; narrow it, e.g. by
      # creation time); AuthError `forbidden` for a namespace the token does not cover (or a
      # replay or discard without an admin token).
      def start_operation(action, filter = {}, reason: nil, by: nil, result: nil)
        body = operation_body(action, filter, result, reason: reason, by: by, dry_run: false)
        Operation.from_json(@http.post("/v1/operations", body))
      end

      # What #start_operation would act on, acting on none (a dry run), as an OperationCount. The
      # same arguments (+result+ for a resolve) and errors.
      def count_operation(action, filter = {}, result: nil)
        body = operation_body(action, filter, result, dry_run: true)
        OperationCount.from_json(@http.post("/v1/operations", body))
      end

      # The Operation +id+ and its progress. NotFoundError `operation_not_found` if there is none
      # (or a token scoped to namespaces did not start it).
      def operation(id)
        Operation.from_json(@http.get(path("v1", "operations", id)))
      end

      # One page of operations, newest first, as an OperationList: +limit+ of them (1–500, the
      # API's default 50) older than the operation +before+ (the previous page's `next_before`).
      # A token scoped to namespaces sees the ones it started.
      def operations(limit: nil, before: nil)
        OperationList.from_json(@http.get("/v1/operations", { limit: limit, before: before }))
      end

      # Cancels a running operation and returns it, "cancelled": the tasks it has not reached are
      # left as they are (those it acted on stay acted on). ConflictError `operation_finished` if
      # it has ended already.
      def cancel_operation(id)
        Operation.from_json(@http.post(path("v1", "operations", id, "cancel")))
      end

      # Follows operation +id+ until it has finished or +timeout+ seconds have passed, reading it
      # every POLL seconds and yielding each reading to the block, if given; returns the last one
      # (Operation#finished? tells whether the time ran out). A failed read raises at once.
      def wait_operation(id, timeout)
        deadline = monotonic + timeout
        loop do
          op = operation(id)
          yield op if block_given?
          left = deadline - monotonic
          return op if op.finished? || left <= 0

          sleep([POLL, left].min)
        end
      end

      private

      # The body of `POST /v1/operations`: the filter's times as RFC 3339, nils left out.
      def operation_body(action, filter, result, dry_run:, reason: nil, by: nil)
        fields = filter.to_h.to_h do |key, value|
          key = key.to_s
          [key, value && %w[created_after created_before].include?(key) ? timestamp(value) : value]
        end
        { action: action, filter: fields.compact, reason: reason, by: by, result: result, dry_run: dry_run }.compact
      end
    end
  end
end
