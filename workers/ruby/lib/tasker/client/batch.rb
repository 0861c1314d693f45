# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # Why Client#create_tasks refused one item: the API's usual error, its stable `code` (the one
    # Client#create_task would raise: "unknown_template", "context_schema_violation",
    # "idempotency_key_reused", ...), `message` and `details` (nil for none).
    BatchItemError = Record.struct(:code, :message, :details)

    # The predicates of a batch item's `status` (BatchItemResult, EventItem): "created",
    # "existing" or "refused".
    module BatchStatus
      def created?
        status == "created"
      end

      def existing?
        status == "existing"
      end

      def refused?
        status == "refused"
      end
    end

    # What Client#create_tasks did with the item at `index` of the request: `status` "created",
    # "existing" (its idempotency key had created that task already, with the same template and
    # context) or "refused" (nothing created for it; `error`, a BatchItemError, says why).
    # `task_id` is the task's id, nil for a refused item.
    BatchItemResult = Record.struct(:index, :status, :task_id, :error, records: { error: BatchItemError }) do
      include BatchStatus
    end

    # What Client#create_tasks did: how many items were `created`, `existing` and `refused`, and
    # each item's BatchItemResult in `results`, in request order.
    BatchCreated = Record.struct(:created, :existing, :refused, :results, records: { results: BatchItemResult },
                                                                          defaults: { results: [].freeze })
  end
end
