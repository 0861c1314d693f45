# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # One request that asked to change something, as Client#audit reads it from the audit log:
    # the token it came with (`token_id`, `token_name`; nil with tokens off or without a valid
    # token), its `method` and `route` (the pattern, "/v1/tasks/{id}/cancel"), the answer's
    # `status` (refusals included), the `peer` it came from (and its X-Forwarded-For,
    # `forwarded_for`, when the orchestrator keeps it), the `namespaces` it named, the `task_id`
    # it acted on and its other targets by kind (`target`: "template", "schedule", "token",
    # "dead_letter", ...). `at` (a Time) is when it arrived.
    AuditEntry = Record.struct(
      :id, :at, :token_id, :token_name, :method, :route, :status, :peer, :forwarded_for,
      :namespaces, :task_id, :target,
      times: %i[at],
      defaults: { namespaces: [].freeze, target: {}.freeze }
    )

    # One page of Client#audit, newest first. `next_before` is the `before:` of the next page,
    # nil on the last one.
    AuditPage = Struct.new(:entries, :next_before, keyword_init: true) do
      def self.from_json(object)
        new(entries: object.fetch("entries").map { |e| AuditEntry.from_json(e) },
            next_before: object["next_before"])
      end
    end
  end
end
