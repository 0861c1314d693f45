# frozen_string_literal: true

require_relative "batch"
require_relative "record"

module Tasker
  class Client
    # What an event did to one template whose trigger matched it (Event#started): `template`
    # ("namespace/name@version"), the `task_id` it started, or why it started none (`refused`, a
    # BatchItemError with the code `POST /v1/tasks` would answer). `debounced` (the trigger's
    # debounce answered it the task of its burst) and `deduplicated` (its dedupe window answered
    # it the task its key started before) are true or false.
    EventStart = Record.struct(
      :template, :task_id, :refused, :debounced, :deduplicated,
      records: { refused: BatchItemError }, defaults: { debounced: false, deduplicated: false }
    )

    # A stored event (Client#send_event, #event): its `namespace`, `name`, `key` (what it is
    # about; nil if none), `sender_id` (the sender's own id; nil if none), `data` (parsed JSON, a
    # Hash) and what it `started`, an EventStart per template whose trigger matched it (empty
    # when none did). `received_at` is a Time.
    Event = Record.struct(
      :id, :namespace, :name, :key, :sender_id, :data, :received_at, :started,
      times: %i[received_at],
      records: { started: EventStart },
      defaults: { data: {}.freeze, started: [].freeze }
    )

    # What Client#send_events did with the event at `index` of the request: `status` "created",
    # "existing" (its `id` was sent before, or earlier in the batch) or "refused" (nothing stored
    # for it; `error`, a BatchItemError, says why). `event_id` is the event's id (nil for a
    # refused one), `task_ids` the tasks it started (for an existing one, those it started the
    # first time).
    EventItem = Record.struct(:index, :status, :event_id, :task_ids, :error,
                              records: { error: BatchItemError }, defaults: { task_ids: [].freeze }) do
      include BatchStatus
    end

    # What Client#send_events did: how many events were `created`, `existing` and `refused`, and
    # each one's EventItem in `results`, in request order.
    EventsSent = Record.struct(:created, :existing, :refused, :results, records: { results: EventItem },
                                                                        defaults: { results: [].freeze })

    # One page of Client#events, newest first. `next_before` is the `before:` of the next page,
    # nil on the last one.
    EventPage = Struct.new(:events, :next_before, keyword_init: true) do
      def self.from_json(object)
        new(events: object.fetch("events").map { |e| Event.from_json(e) }, next_before: object["next_before"])
      end
    end

    # Events sent to a namespace (`/v1/events`, docs/events.md), Client's calls: each event starts
    # a task of every template whose trigger (`on:`) matches it. Semantics follow the Rust client
    # (tasker-client/src/namespace_events.rs).
    module Events
      # Sends the event +name+ (1–64 of [A-Za-z0-9_.-], such as "order.created") to +namespace+
      # with +data+ (a Hash; {} when nil) and returns the Event as stored: `started` has an
      # EventStart per template whose trigger matched it, with the task it started or why it was
      # refused. +key+ (1–255 characters) says what the event is about (a customer, an order).
      # With +id+ (1–255 characters, the sender's own), sending it again to the namespace returns
      # the event stored the first time and starts nothing: a retried send is safe (#send_events
      # tells a repeat apart, "existing"). InvalidRequestError `invalid_event_name`,
      # `invalid_event_data` (not an object, or over the server's `max_context_bytes`),
      # `invalid_event_key` or `invalid_event_id`; AuthError `forbidden` for a namespace the
      # token does not cover. Nothing is stored then.
      def send_event(namespace, name, data = nil, key: nil, id: nil)
        body = { namespace: namespace, name: name, data: data, key: key, id: id }.compact
        Event.from_json(@http.post("/v1/events", body))
      end

      # Sends many events in one request and one transaction (`POST /v1/events:batch`, at most the
      # server's `max_batch_tasks`, 10,000 by default). +events+ is an Array of Hashes, each what
      # #send_event sends (string or symbol keys): "namespace", "name" and optionally "data",
      # "key" and "id", nils left out.
      #
      # Returns an EventsSent with an EventItem per event, in request order: "created",
      # "existing" or "refused" (its `error` has the code #send_event would raise). One refused
      # event does not fail the others. The whole request is refused, nothing stored, with
      # InvalidRequestError `empty_batch`, `batch_too_large` (413; #details has "events" and
      # "limit") or `body_too_large`.
      def send_events(events)
        EventsSent.from_json(@http.post("/v1/events:batch", { events: events.map { |e| e.to_h.compact } }))
      end

      # One page of events, newest first, as an EventPage: of +namespace+ and +name+ if given;
      # +limit+ of them (1–500, the API's default 50) older than the event +before+ (the previous
      # page's `next_before`). A token scoped to namespaces reads its namespaces' events (AuthError
      # `forbidden` for another +namespace+); InvalidRequestError `invalid_limit`.
      def events(namespace: nil, name: nil, before: nil, limit: nil)
        query = { namespace: namespace, name: name, before: before, limit: limit }
        EventPage.from_json(@http.get("/v1/events/log", query))
      end

      # The Event +id+ with what it started. NotFoundError `event_not_found` if there is none;
      # AuthError `forbidden` for an event of a namespace the token does not cover.
      def event(id)
        Event.from_json(@http.get(path("v1", "events", id)))
      end
    end
  end
end
