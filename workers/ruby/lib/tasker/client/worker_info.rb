# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A worker process as the orchestrator's registry knows it (Client#workers): its `name`,
    # `language` ("rust", "python", "ruby", "typescript", ...) and package `version`, where it
    # runs (`host`, `pid`), the `namespaces` it consumes, the `handlers` it registered and its
    # `concurrency`. `started_at` and `last_seen_at` are Times; `live` is false for a worker not
    # seen for longer than the liveness window (listed only with `all: true`).
    WorkerInfo = Record.struct(
      :id, :name, :language, :version, :host, :pid, :namespaces, :handlers, :concurrency,
      :started_at, :last_seen_at, :live,
      times: %i[started_at last_seen_at],
      defaults: { namespaces: [].freeze, handlers: [].freeze }
    ) do
      # Whether it was seen within the liveness window.
      def live?
        live == true
      end
    end
  end
end
