# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # How a webhook's requests are signed, and which event each makes by default
    # (Client#put_webhook's "format"; "generic" when left out).
    WEBHOOK_FORMATS = %w[generic github stripe].freeze

    # A webhook (Client#put_webhook, #get_webhook): requests to its URL, `POST
    # /v1/webhooks/<name>`, signed with its secret become events of its `namespace`. `format` is
    # one of WEBHOOK_FORMATS; `event` (a fixed event name), `key` and `id` (JSON pointers into
    # the body) are nil when the format's default is used; `tolerance_seconds` is its replay
    # window. `received` counts the requests it turned into events, the last at
    # `last_received_at`. `secret` is the one Tasker made, only in the answer of the
    # #put_webhook that created it (nil in every other). `last_received_at`, `created_at` and
    # `updated_at` are Times.
    Webhook = Record.struct(
      :name, :namespace, :format, :event, :key, :id, :tolerance_seconds, :received, :last_received_at,
      :secret, :created_at, :updated_at,
      times: %i[last_received_at created_at updated_at]
    )

    # Webhooks (`/v1/webhooks`, docs/events.md "Webhooks in"), Client's calls: save, list, show
    # and remove the URLs another service (GitHub, Stripe, your own) posts to with no token. The
    # inbound `POST /v1/webhooks/<name>` is the sender's, not the client's. Semantics follow the
    # Rust client (tasker-client/src/webhooks.rs).
    module Webhooks
      # Creates the webhook +name+ (1–128 ASCII letters, digits, _, - and .: the last part of its
      # URL), or replaces the whole of it (its counts stay, and its secret unless a new one is
      # given), and returns the Webhook as stored. +definition+ is a Hash of the API's fields
      # (string or symbol keys, nils left out): "namespace" (its events go there) and optionally
      # "format" (one of WEBHOOK_FORMATS), "secret" (16–256 characters; Stripe's `whsec_…` as
      # Stripe shows it), "event", "key", "id" and "tolerance" (the replay window, 1s to 1h: a
      # duration String such as "2m", or seconds; "5m" by default).
      #
      # Without "secret", a new webhook gets one Tasker makes: the answer's `secret`, shown this
      # once. Each request it receives is judged with the token that saved it.
      # InvalidRequestError `invalid_webhook` (#details has "field" and "problem"); AuthError
      # `forbidden` for a namespace the token does not cover (or a name another namespace's
      # webhook holds).
      def put_webhook(name, definition)
        body = definition.to_h { |key, value| [key, key.to_s == "tolerance" && value ? duration(value) : value] }
        Webhook.from_json(@http.put(path("v1", "webhooks", name), body.compact))
      end

      # Every Webhook of the namespaces the token covers, by name (`GET /v1/webhooks`; the API
      # takes no filter). Never a secret.
      def list_webhooks
        @http.get("/v1/webhooks").fetch("webhooks").map { |w| Webhook.from_json(w) }
      end

      # The Webhook +name+, without its secret. NotFoundError `webhook_not_found` if there is
      # none; AuthError `forbidden` for one of a namespace the token does not cover.
      def get_webhook(name)
        Webhook.from_json(@http.get(path("v1", "webhooks", name)))
      end

      # Removes the webhook +name+: its URL answers `404 webhook_not_found` from now on. Returns
      # nil; NotFoundError `webhook_not_found` if there is none.
      def delete_webhook(name)
        @http.delete(path("v1", "webhooks", name))
        nil
      end
    end
  end
end
