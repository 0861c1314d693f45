# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # What an alert rule watches in its namespace (AlertCondition#kind).
    ALERT_KINDS = %w[failures deadline_passed steps_waiting schedule_skipped dead_letters].freeze

    # When an alert rule fires: `count` (1 when nil) or more of `kind` (one of ALERT_KINDS) in the
    # window `within` ("5m" when nil), or waiting longer than `longer_than` now (steps_waiting);
    # `template` (failures, deadline_passed) and `schedule` (schedule_skipped) narrow it. The
    # fields it was saved without are nil.
    AlertCondition = Record.struct(:kind, :count, :within, :longer_than, :template, :schedule)

    # Where an alert rule's notices go: `kind` "webhook" (the notice as JSON to `url`, signed as
    # Tasker's generic webhooks are, with the rule's secret), "slack" (`{"text": …}` to `url`,
    # what Slack's incoming webhooks take) or "email" (to each of `to`, through the orchestrators'
    # SMTP server); the fields of the other kinds are nil.
    AlertSink = Record.struct(:kind, :url, :to)

    # An alert rule (Client#put_alert, #get_alert) and what it last did: its `namespace`, `when`
    # (an AlertCondition), `sink` (an AlertSink), `suppress_seconds`; `state` ("firing" or "ok"),
    # what it `observed` at its last check (`checked_at`), `fired_at`, `resolved_at`, its notices
    # `sent`, `failed` and `suppressed`, and `last_error` (why the last delivery failed, or why
    # the rule is not checked). `secret` is the one Tasker made for its webhook sink, only in the
    # answer of the #put_alert that created it (nil in every other). The `_at` fields are Times.
    Alert = Record.struct(
      :name, :namespace, :when, :sink, :suppress_seconds, :state, :observed, :checked_at, :fired_at,
      :resolved_at, :sent, :failed, :suppressed, :last_error, :secret, :created_at, :updated_at,
      times: %i[checked_at fired_at resolved_at created_at updated_at],
      records: { when: AlertCondition, sink: AlertSink }
    ) do
      # Whether its condition held at its last check.
      def firing?
        state == "firing"
      end
    end

    # Alert rules (`/v1/alerts`, docs/events.md "Alerts out"), Client's calls: a condition of one
    # namespace watched every second, and a sink told once when it fires and once when it
    # clears; saved (an admin token), listed, shown with what each last did, removed. Semantics
    # follow the Rust client (tasker-client/src/alerts.rs).
    module Alerts
      # The durations of a rule's condition, written as #duration writes them.
      WINDOWS = %w[within longer_than].freeze

      # Creates the alert rule +name+ (1–128 ASCII letters, digits, _, - and .), or replaces the
      # whole of it (what it last did stays, and its webhook sink's secret unless a new one is
      # given), and returns the Alert as stored; it is checked within a second. +rule+ is a Hash
      # of the API's fields (string or symbol keys, nils left out): "namespace"; "when", `{ kind:,
      # count:, within:, longer_than:, template:, schedule: }` (see AlertCondition); "sink", `{
      # kind: "webhook" | "slack", url: }` or `{ kind: "email", to: [addresses] }` (1–20);
      # optionally "secret" (a webhook sink's, 16–256 characters) and "suppress" (how long
      # another firing notice is held back, "15m" by default, "0s" to a day). Durations are
      # Strings ("1m") or seconds; an answer's AlertCondition and AlertSink are taken too.
      #
      # Without "secret", a new rule with a webhook sink gets one Tasker makes: the answer's
      # `secret`, shown this once. It takes an admin token covering the namespace (AuthError
      # `forbidden` otherwise, also for a name another namespace's rule holds);
      # InvalidRequestError `invalid_alert` (#details has "field" and "problem"; an email sink
      # without an SMTP server is refused at "sink.kind").
      def put_alert(name, rule)
        body = rule.to_h do |key, value|
          case key.to_s
          when "suppress" then [key, value && duration(value)]
          when "when" then [key, value && alert_condition(value)]
          when "sink" then [key, value&.to_h&.compact]
          else [key, value]
          end
        end
        Alert.from_json(@http.put(path("v1", "alerts", name), body.compact))
      end

      # Every Alert of the namespaces the token covers, by name, with what each last did (`GET
      # /v1/alerts`; the API takes no filter). Never a secret.
      def list_alerts
        @http.get("/v1/alerts").fetch("alerts").map { |a| Alert.from_json(a) }
      end

      # The Alert +name+ and what it last did, without its secret. NotFoundError
      # `alert_not_found` if there is none; AuthError `forbidden` for one of a namespace the token
      # does not cover.
      def get_alert(name)
        Alert.from_json(@http.get(path("v1", "alerts", name)))
      end

      # Removes the alert rule +name+: it is checked no more, and its notices not sent yet go.
      # It takes an admin token covering its namespace. Returns nil; NotFoundError
      # `alert_not_found` if there is none.
      def delete_alert(name)
        @http.delete(path("v1", "alerts", name))
        nil
      end

      private

      # A rule's condition as the API takes it: its windows as #duration writes them, nils left
      # out.
      def alert_condition(condition)
        condition.to_h { |key, value| [key, WINDOWS.include?(key.to_s) && value ? duration(value) : value] }.compact
      end
    end
  end
end
